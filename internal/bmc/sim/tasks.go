package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Tasks (Quirks.TaskMonitor): an action is answered 202 Accepted with a
// Location naming its task monitor, as DSP0266 §12.2 describes. The
// monitor answers 202 with the Task while it runs; once the task is done
// it answers the action's own outcome (204) once, then 404 (the service
// may delete a monitor whose outcome was read). The Task resource stays.
const (
	taskServicePath = rootPath + "/TaskService"
	tasksPath       = taskServicePath + "/Tasks"
	taskMonitorPath = taskServicePath + "/TaskMonitors"
	// defaultTaskDelay is how long a task runs when Quirks.TaskDelay is 0.
	defaultTaskDelay = 200 * time.Millisecond
)

type simTask struct {
	id, name string
	started  time.Time
	done     bool
	read     bool // the monitor answered the outcome
	// fail is why this task failed ("": it did not, unless
	// Quirks.TaskFails); note a message it carries (its MessageId
	// noteID; update.go: what a firmware update awaits); pending: it
	// waits for a reset (TaskState Pending), as iDRAC's scheduled update
	// jobs do.
	fail, note, noteID string
	pending            bool
}

type taskTable struct {
	mu    sync.Mutex
	next  int
	tasks map[string]*simTask
}

// startTask answers an action 202 with a task monitor and runs fn when the
// task completes, TaskDelay later.
func (f *Fleet) startTask(w http.ResponseWriter, name string, fn func()) {
	tt := &f.tasks
	tt.mu.Lock()
	if tt.tasks == nil {
		tt.tasks = make(map[string]*simTask)
	}
	tt.next++
	t := &simTask{id: strconv.Itoa(tt.next), name: name, started: time.Now()}
	tt.tasks[t.id] = t
	doc := f.taskJSONLocked(t)
	tt.mu.Unlock()
	d := f.q.TaskDelay
	if d <= 0 {
		d = defaultTaskDelay
	}
	f.later(d, func() {
		if !f.q.TaskFails {
			fn()
		}
		tt.mu.Lock()
		t.done = true
		tt.mu.Unlock()
	})
	w.Header().Set("Location", f.q.withSlash(taskMonitorPath+"/"+t.id))
	f.writeDoc(w, http.StatusAccepted, doc, "")
}

func (f *Fleet) taskJSONLocked(t *simTask) map[string]any {
	state, status, pct := "Running", "OK", 50
	var msgs []any
	switch {
	case t.done && t.fail != "":
		state, status, pct = "Exception", "Critical", 100
		msgs = []any{map[string]any{"MessageId": msgRegistryBase + "GeneralError", "Message": t.fail}}
	case t.done && f.q.TaskFails:
		state, status, pct = "Exception", "Critical", 100
		msgs = []any{map[string]any{"MessageId": msgRegistryBase + "InternalError",
			"Message": "The request failed due to an internal service error (simulated task failure)."}}
	case t.done:
		state, pct = "Completed", 100
	case t.pending:
		state = "Pending"
	}
	if t.note != "" && t.fail == "" {
		msgs = append(msgs, map[string]any{"MessageId": t.noteID, "Message": t.note})
	}
	return map[string]any{
		"@odata.id":       tasksPath + "/" + t.id,
		"@odata.type":     "#Task.v1_7_0.Task",
		"Id":              t.id,
		"Name":            "Task " + t.name,
		"TaskState":       state,
		"TaskStatus":      status,
		"PercentComplete": pct,
		"StartTime":       t.started.UTC().Format(time.RFC3339),
		"TaskMonitor":     taskMonitorPath + "/" + t.id,
		"Messages":        append([]any{}, msgs...),
	}
}

// serveTasks serves the TaskService, its tasks and their monitors.
func (f *Fleet) serveTasks(w http.ResponseWriter, r *http.Request, rest []string) {
	if !f.tasksServed() || !allow(w, r, http.MethodGet) || !f.checkAuth(w, r) {
		if !f.tasksServed() {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
		}
		return
	}
	tt := &f.tasks
	tt.mu.Lock()
	defer tt.mu.Unlock()
	switch {
	case len(rest) == 0:
		f.writeDoc(w, http.StatusOK, map[string]any{
			"@odata.id": taskServicePath, "@odata.type": "#TaskService.v1_2_0.TaskService",
			"Id": "TaskService", "Name": "Task Service", "ServiceEnabled": true,
			"Tasks": odataID(tasksPath),
		}, "")
		return
	case len(rest) == 2 && (rest[0] == "Tasks" || rest[0] == "TaskMonitors"):
		t := tt.tasks[rest[1]]
		if t == nil || (rest[0] == "TaskMonitors" && t.read) {
			break
		}
		if rest[0] == "Tasks" {
			f.writeDoc(w, http.StatusOK, f.taskJSONLocked(t), "")
			return
		}
		if !t.done {
			w.Header().Set("Location", f.q.withSlash(taskMonitorPath+"/"+t.id))
			w.Header().Set("Retry-After", "1")
			f.writeDoc(w, http.StatusAccepted, f.taskJSONLocked(t), "")
			return
		}
		t.read = true
		if t.fail != "" {
			writeError(w, http.StatusInternalServerError, "GeneralError", t.fail)
			return
		}
		if f.q.TaskFails {
			// The outcome of a failed task: its error.
			writeError(w, http.StatusInternalServerError, "InternalError", "The request failed due to an internal service error (simulated task failure).")
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
}
