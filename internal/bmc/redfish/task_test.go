package redfish

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// startSimTask has the sim start a task (a reset answered 202 with a
// task monitor) and returns the monitor, as the BMC wrote it.
func startSimTask(t *testing.T, f *sim.Fleet) string {
	t.Helper()
	sys := f.SystemIDs()[0]
	req, err := http.NewRequest(http.MethodPost, f.URL()+sys+"/Actions/ComputerSystem.Reset",
		strings.NewReader(`{"ResetType":"On"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", testPassword)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") == "" {
		t.Fatalf("reset answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return resp.Header.Get("Location")
}

// TestTaskStatus reads a task monitor once per call: running while it
// answers 202, done when it answers the outcome (204), and still done
// when the BMC no longer serves the monitor whose outcome was read (404).
// A monitor the BMC does not know, unread, is an error; Monitor "" is done.
func TestTaskStatus(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) {
		q.TaskMonitor, q.TaskDelay = true, 300*time.Millisecond
	}})
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	ctx := context.Background()
	mon := startSimTask(t, f)

	st, err := c.TaskStatus(ctx, bmc.Task{Monitor: mon})
	if err != nil {
		t.Fatal(err)
	}
	if st.Done || st.Failed || st.Percent <= 0 || st.Percent >= 100 {
		t.Fatalf("running task read as %+v", st)
	}
	st = waitTask(t, c, mon)
	if st.Failed || st.Percent != 100 {
		t.Fatalf("finished task read as %+v", st)
	}
	// The sim now answers 404 for this monitor: its outcome was read.
	again, err := c.TaskStatus(ctx, bmc.Task{Monitor: mon})
	if err != nil || !again.Done || again.Failed {
		t.Fatalf("monitor read again after its outcome: %+v, %v", again, err)
	}

	_, err = c.TaskStatus(ctx, bmc.Task{Monitor: "/redfish/v1/TaskService/TaskMonitors/999"})
	wantKind(t, err, bmc.KindBMCError)
	if !strings.Contains(err.Error(), "never read") {
		t.Fatalf("unknown monitor: %v", err)
	}
	if st, err := c.TaskStatus(ctx, bmc.Task{}); err != nil || !st.Done || st.Failed {
		t.Fatalf("no monitor: %+v, %v", st, err)
	}
}

// TestTaskStatusFailed: a task that ends in an error is done and failed,
// with the BMC's message.
func TestTaskStatusFailed(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) {
		q.TaskMonitor, q.TaskFails, q.TaskDelay = true, true, 100*time.Millisecond
	}})
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	st := waitTask(t, c, startSimTask(t, f))
	if !st.Failed || !strings.Contains(st.Message, "simulated task failure") {
		t.Fatalf("failed task read as %+v", st)
	}
}

// waitTask polls TaskStatus until the task is done.
func waitTask(t *testing.T, c *Client, monitor string) bmc.TaskStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := c.TaskStatus(context.Background(), bmc.Task{Monitor: monitor})
		if err != nil {
			t.Fatal(err)
		}
		if st.Done {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %+v", monitor, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTaskStatusOf reads the bodies BMCs answer with: a Task resource
// (its TaskState decides even under 200) and iDRAC's Job (JobState,
// Message), which its Location names instead of a monitor.
func TestTaskStatusOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		body doc
		want bmc.TaskStatus
	}{
		{"task running", doc{"TaskState": "Running", "PercentComplete": 40.0}, bmc.TaskStatus{Percent: 40}},
		{"task completed", doc{"TaskState": "Completed", "TaskStatus": "OK"}, bmc.TaskStatus{Done: true, Percent: 100}},
		{"task critical", doc{"TaskState": "Completed", "TaskStatus": "Critical", "Messages": []any{map[string]any{"Message": "disk busy"}}},
			bmc.TaskStatus{Done: true, Failed: true, Percent: 100, Message: "disk busy"}},
		{"task exception", doc{"TaskState": "Exception"}, bmc.TaskStatus{Done: true, Failed: true, Percent: 100, Message: "the task ended Exception"}},
		{"idrac scheduled", doc{"JobState": "Scheduled", "PercentComplete": 0.0, "Message": "Task successfully scheduled."},
			bmc.TaskStatus{Staged: true, Message: "Task successfully scheduled."}},
		{"idrac completed", doc{"JobState": "Completed", "Message": "Job completed successfully."},
			bmc.TaskStatus{Done: true, Percent: 100, Message: "Job completed successfully."}},
		{"idrac failed", doc{"JobState": "Failed", "Message": "Unable to create the virtual disk."},
			bmc.TaskStatus{Done: true, Failed: true, Percent: 100, Message: "Unable to create the virtual disk."}},
	} {
		if got := taskStatusOf(tc.body); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
