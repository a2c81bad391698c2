package cnisocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
)

// Call sends req to the agent listening on socket and waits for its answer
// until ctx ends. It returns nil when the pod's networks are ready, and an
// error naming the pod and the reason otherwise (the agent's answers name
// the pod themselves).
func Call(ctx context.Context, socket string, req Request) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("pod %s/%s: podnet agent at %q: %w", req.Namespace, req.Name, socket, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return fmt.Errorf("pod %s/%s: set deadline: %w", req.Namespace, req.Name, err)
		}
	}
	// Closing the connection when ctx ends unblocks the read below.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	sendErr := json.NewEncoder(conn).Encode(req)
	// The agent may have refused the connection before reading the
	// request (wrong user, too many requests): its answer is read even
	// when sending failed.
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		if sendErr != nil {
			return fmt.Errorf("pod %s/%s: send to podnet agent: %w", req.Namespace, req.Name, errors.Join(sendErr, ctx.Err()))
		}
		return fmt.Errorf("pod %s/%s: no answer from podnet agent: %w", req.Namespace, req.Name, errors.Join(err, ctx.Err()))
	}
	switch {
	case resp.Error != "":
		return errors.New(resp.Error)
	case sendErr != nil:
		return fmt.Errorf("pod %s/%s: send to podnet agent: %w", req.Namespace, req.Name, sendErr)
	}
	return nil
}
