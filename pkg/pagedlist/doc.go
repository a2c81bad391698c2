// Package pagedlist makes an informer's initial list arrive in pages and
// trims each page as it arrives, so that loading thousands of objects never
// holds more than one page of them untrimmed.
//
// Why: a reflector's first list asks for resourceVersion "0", which the
// API server answers from its watch cache in one piece, whatever the page
// size; the whole list is decoded before the cache's transform trims a
// single object, so the process briefly holds every object in full. A
// server that streams the initial list instead (WatchList: Kubernetes 1.34
// and later on an etcd that supports progress notifications) sends one
// object at a time and never calls List; this package changes nothing
// then.
//
// It must not change what the cache ends up holding: the same objects, the
// same transform, the same resource version semantics (a list "at least as
// new as" is answered with the latest state, which is newer still).
package pagedlist
