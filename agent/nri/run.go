package nri

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/stub"

	"podnet.io/podnet/api/v1alpha1"
)

// Reconnect backoff: from the first retry to the longest wait between
// tries, doubling.
const (
	reconnectFirst = 100 * time.Millisecond
	reconnectMax   = 5 * time.Second
)

// Start implements manager.Runnable: it registers with the runtime as
// v1alpha1.NRIPluginName at v1alpha1.NRIPluginIndex and, whenever the
// connection ends (the runtime restarted, the socket went away), connects
// again with backoff, until ctx ends.
func (p *Plugin) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	wait := reconnectFirst
	// Every agent has --nri-socket by default, so on a node whose runtime
	// has no NRI the same error comes back every few seconds for good: it
	// is logged when it first comes and when it changes.
	var lastErr string
	for {
		connected, err := p.connectOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			wait = reconnectFirst
			lastErr = ""
			p.Log.Info("NRI connection closed; reconnecting", "socket", p.Socket)
		} else if err.Error() != lastErr {
			lastErr = err.Error()
			p.Log.Error(err, "NRI connect; retrying quietly until it connects or the error changes", "socket", p.Socket, "retryIn", wait)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, reconnectMax)
	}
}

// connectOnce registers with the runtime and serves it until the
// connection closes or ctx ends; connected says whether it registered.
func (p *Plugin) connectOnce(ctx context.Context) (connected bool, err error) {
	closed := make(chan struct{})
	var once sync.Once
	st, err := stub.New(p,
		stub.WithPluginName(v1alpha1.NRIPluginName),
		stub.WithPluginIdx(v1alpha1.NRIPluginIndex),
		stub.WithSocketPath(p.Socket),
		stub.WithOnClose(func() { once.Do(func() { close(closed) }) }),
	)
	if err != nil {
		return false, fmt.Errorf("NRI plugin: %w", err)
	}
	if err := st.Start(ctx); err != nil {
		st.Stop()
		return false, fmt.Errorf("NRI plugin: register at %s: %w", p.Socket, err)
	}
	p.Log.Info("registered with the runtime over NRI", "socket", p.Socket, "plugin", v1alpha1.NRIPluginIndex+"-"+v1alpha1.NRIPluginName)
	p.setConnected(true)
	defer p.setConnected(false)
	if p.OnConnect != nil {
		go p.OnConnect()
	}
	select {
	case <-closed:
	case <-ctx.Done():
	}
	st.Stop()
	return true, nil
}

// Connected says whether the plugin is registered with the runtime now:
// while it is not, the runtime creates containers without asking it.
func (p *Plugin) Connected() bool {
	return p.connected.Load()
}

func (p *Plugin) setConnected(on bool) {
	p.connected.Store(on)
	p.Metrics.setConnected(on)
}
