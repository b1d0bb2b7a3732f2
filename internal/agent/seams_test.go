package agent

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// The hooks a simulated machine (internal/bmc/sim) runs the agent with:
// its own CPU count, boot id and uptime instead of the host's.
func TestCollectorAndLoopTakeTheMachinesOwn(t *testing.T) {
	inv := (&Collector{Sys: t.TempDir(), Proc: t.TempDir(), CPUs: func() int { return 96 }}).Collect()
	if inv.CPUs != 96 {
		t.Errorf("CPUs %d; want the machine's 96", inv.CPUs)
	}
	rec := &recordingController{}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{Controller: rec, Log: slog.New(slog.DiscardHandler),
		Boot:     func() (string, float64) { return "boot-of-the-machine", 12.5 },
		Accepted: func(int) { cancel() }}
	l.Run(ctx)
	if hb := rec.first(); hb.BootID != "boot-of-the-machine" || hb.UptimeSeconds != 12.5 {
		t.Errorf("heartbeat boot id %q, uptime %v; want the machine's", hb.BootID, hb.UptimeSeconds)
	}
}

type recordingController struct {
	mu    sync.Mutex
	beats []api.AgentHeartbeat
}

func (c *recordingController) Heartbeat(_ context.Context, hb api.AgentHeartbeat) (api.AgentReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats = append(c.beats, hb)
	return api.AgentReply{}, nil
}

func (c *recordingController) first() api.AgentHeartbeat {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.beats[0]
}

// Wait returns only once a command whose context ended has stopped and
// recorded its outcome: a machine that lost power waits for it before it
// may boot again.
func TestRunnerWaitOutlastsTheCommand(t *testing.T) {
	m := newMachine(t, testDisk{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib})
	started := make(chan struct{})
	var once sync.Once
	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		<-r.Context().Done() // the image never comes
	}))
	defer images.Close()
	r := m.runner(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	r.Reply(ctx, nil, &api.AgentCommand{ID: "w", Kind: api.AgentWriteImage, Image: &api.Image{URL: images.URL + "/disk.raw"}})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatalf("the write never asked for its image: %+v", r.Status())
	}
	cancel()
	r.Wait()
	if st := r.Status(); st == nil || st.State != api.AgentCommandFailed {
		t.Fatalf("after Wait: %+v; want the interrupted write's outcome", st)
	}
}
