package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Task monitors (bmc.TaskMonitor), read once per call, for the callers
// that follow long operations themselves (volumes, firmware updates) and
// must not hold a request open for minutes the way followTask does.
//
// What a monitor answers (DSP0266 §12.2, and what BMCs do instead):
//
//   - 202 Accepted, usually with the Task: running.
//   - Any other 2xx: the operation's outcome, so the task is done. When
//     the body is a Task (the Location named the Task resource itself,
//     not its monitor) or a Dell Job (iDRAC's Location is
//     /redfish/v1/Managers/iDRAC.Embedded.1/Jobs/JID_...: its scripts and
//     dell/terraform-provider-redfish poll that resource, which answers
//     200 with the state), its TaskState or JobState decides instead.
//   - 4xx/5xx other than 401/403/404/410/429/503: the operation's outcome
//     again, an error: done and failed, with the BMC's message.
//   - 404/410: the monitor is gone. A service may delete it once its
//     outcome was read, and some BMCs delete finished tasks at once: that
//     is done only when this driver read the outcome before (taskMemo);
//     otherwise it is an error, and the caller reads back the result.
//
// 401 and 403 are the credentials' fault, 429 and 503 a busy BMC: errors
// of their kind, never a task outcome.

var _ bmc.TaskMonitor = (*Client)(nil)

// TaskStatus reads where a task stands: one GET of its monitor.
func (cl *Client) TaskStatus(ctx context.Context, t bmc.Task) (bmc.TaskStatus, error) {
	const op = "read task"
	monitor := relPath(t.Monitor)
	if monitor == "" {
		// Monitor "" is an operation the BMC completed before answering.
		return bmc.TaskStatus{Done: true, Percent: 100}, nil
	}
	var st bmc.TaskStatus
	err := cl.call(ctx, op, func(api *gofish.APIClient) error {
		var err error
		st, err = readTask(api, monitor)
		if err != nil {
			if (statusOf(err) == http.StatusNotFound || statusOf(err) == http.StatusGone) && cl.c != nil {
				if prev, ok := finishedTasks.get(cl.c.endpoint, monitor); ok {
					st = prev
					return nil
				}
				return &bmc.Error{Kind: bmc.KindBMCError, Op: op, Err: fmt.Errorf(
					"the task monitor %s is gone (%v) and its outcome was never read: read back what the task changed", monitor, reduce(err))}
			}
			return err
		}
		if st.Done && cl.c != nil {
			finishedTasks.put(cl.c.endpoint, monitor, st)
		}
		return nil
	})
	return st, err
}

// readTask GETs a monitor once and says what it means; errors are those
// that are no outcome (and 404/410, which the caller judges).
func readTask(api *gofish.APIClient, monitor string) (bmc.TaskStatus, error) {
	resp, err := api.Get(monitor)
	defer schemas.DeferredCleanupHTTPResponse(resp)
	if err != nil {
		switch statusOf(err) {
		case 0, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
			http.StatusGone, http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return bmc.TaskStatus{}, err
		default:
			// The operation's outcome: it failed, and this is why.
			return bmc.TaskStatus{Done: true, Failed: true, Percent: 100, Message: reduce(err).Error()}, nil
		}
	}
	var task doc
	if body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxDoc)); rerr == nil && len(body) > 0 {
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			task = doc(m)
		}
	}
	st := taskStatusOf(task)
	switch {
	case resp.StatusCode == http.StatusAccepted:
		// Running, whatever the Task says of itself (some BMCs say
		// Completed a moment before the monitor stops answering 202).
		st.Done, st.Failed = false, false
		if st.Percent >= 100 {
			st.Percent = 99
		}
	case task.get("TaskState") == nil && task.get("JobState") == nil:
		// The outcome of a completed operation.
		st = bmc.TaskStatus{Done: true, Percent: 100}
	}
	return st, nil
}

// taskStatusOf reads a Task (TaskState, TaskStatus, PercentComplete,
// Messages) or a Dell Job (JobState, PercentComplete, Message).
func taskStatusOf(task doc) bmc.TaskStatus {
	st := bmc.TaskStatus{Percent: min(max(task.int("PercentComplete"), 0), 100)}
	var msgs []string
	for _, m := range task.arr("Messages") {
		md, _ := m.(map[string]any)
		if s := doc(md).str("Message"); s != "" {
			msgs = append(msgs, s)
		}
	}
	if s := task.str("Message"); s != "" {
		msgs = append(msgs, s)
	}
	if len(msgs) > 0 {
		// The last word; all of them when it failed (below).
		st.Message = msgs[len(msgs)-1]
	}
	state, health := task.str("TaskState"), task.str("TaskStatus")
	if state == "" {
		state = task.str("JobState")
	}
	switch strings.ToLower(state) {
	case "completed":
		st.Done = true
		st.Failed = strings.EqualFold(health, "Critical")
	case "exception", "killed", "cancelled", "interrupted",
		"failed", "completedwitherrors": // Dell JobState
		st.Done, st.Failed = true, true
	case "pending", "scheduled": // a task (or Dell job) staged for the next reset
		st.Staged = true
	}
	for _, m := range task.arr("Messages") {
		md, _ := m.(map[string]any)
		if id := doc(md).str("MessageId"); strings.Contains(id, "AwaitToActivate") {
			st.Staged = true
		}
	}
	if st.Failed {
		if len(msgs) > maxMessages {
			msgs = msgs[len(msgs)-maxMessages:]
		}
		st.Message = strings.Join(msgs, "; ")
		if st.Message == "" {
			st.Message = "the task ended " + state
		}
	}
	if st.Done {
		st.Percent = 100
	}
	return st
}

// finishedTasks remembers the outcome of the tasks whose monitor this
// process read as done, per BMC, so that the 404 a BMC may answer on the
// next read is not mistaken for a task that vanished unread. Bounded in
// size and age: a caller reads a task again within seconds, not days.
var finishedTasks = &taskMemo{ttl: time.Hour, max: 4096}

type taskMemo struct {
	mu  sync.Mutex
	ttl time.Duration
	max int
	m   map[[2]string]taskOutcome
}

type taskOutcome struct {
	st bmc.TaskStatus
	at time.Time
}

func (tm *taskMemo) get(endpoint, monitor string) (bmc.TaskStatus, bool) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	o, ok := tm.m[[2]string{endpoint, strings.TrimSuffix(monitor, "/")}]
	if !ok || time.Since(o.at) > tm.ttl {
		return bmc.TaskStatus{}, false
	}
	return o.st, true
}

func (tm *taskMemo) put(endpoint, monitor string, st bmc.TaskStatus) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.m == nil {
		tm.m = make(map[[2]string]taskOutcome)
	}
	now := time.Now()
	if len(tm.m) >= tm.max {
		oldest, at := [2]string{}, now
		for k, o := range tm.m {
			if now.Sub(o.at) > tm.ttl {
				delete(tm.m, k)
				continue
			}
			if o.at.Before(at) {
				oldest, at = k, o.at
			}
		}
		if len(tm.m) >= tm.max {
			delete(tm.m, oldest)
		}
	}
	tm.m[[2]string{endpoint, strings.TrimSuffix(monitor, "/")}] = taskOutcome{st: st, at: now}
}
