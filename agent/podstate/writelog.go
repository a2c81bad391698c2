package podstate

import "time"

// WriteMemory is how long the agent trusts its note of what it wrote on a
// pod over a cache that does not show the write yet. A pod event that
// arrives between the agent's patch and the cache catching up (the
// kubelet's own status update, say) would otherwise make the next
// reconcile write the same status and emit the same Event again.
const WriteMemory = 10 * time.Second

// WriteLog is the agent's latest write of each kind ("annotation",
// "condition", "event") on one pod: what, and when. It is not safe for
// concurrent use; its holder guards it.
type WriteLog map[string]write

type write struct {
	content string
	at      time.Time
}

// Recently reports whether the log holds this content of this kind,
// written less than WriteMemory before now.
func (l WriteLog) Recently(kind, content string, now time.Time) bool {
	w, ok := l[kind]
	return ok && w.content == content && now.Sub(w.at) < WriteMemory
}

// Note records a write; a nil log becomes a new one.
func (l *WriteLog) Note(kind, content string, now time.Time) {
	if *l == nil {
		*l = WriteLog{}
	}
	(*l)[kind] = write{content: content, at: now}
}
