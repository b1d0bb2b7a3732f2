package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Writes. A PATCH carries If-Match with the ETag the resource was read
// with, where the BMC gave one: Lenovo XCC answers 428 to a PATCH without
// it (gofish#171), and a BMC whose ETag changed since the read (iLO's
// change with power) answers 412. Either way the resource is read again
// and the PATCH sent once more with the fresh ETag ("*" when the BMC
// serves none but demands one). Actions (POST) may be answered 202 with a
// task monitor: the write is then done only when the task is, which
// followTask waits for.

// patchResource PATCHes payload to path, read with etag ("" none).
// reread returns the resource's current ETag, for a retry after 412/428.
func patchResource(ctx context.Context, api *gofish.APIClient, path string, payload any, etag string, reread func() (string, error)) error {
	send := func(etag string) error {
		hdr := map[string]string{}
		if etag != "" {
			hdr["If-Match"] = etag
		}
		resp, err := api.PatchWithHeaders(path, payload, hdr)
		defer schemas.DeferredCleanupHTTPResponse(resp)
		if err != nil {
			return err
		}
		return followAccepted(ctx, api, resp, "PATCH "+path)
	}
	err := send(etag)
	if st := statusOf(err); st != http.StatusPreconditionFailed && st != http.StatusPreconditionRequired {
		return err
	}
	fresh, rerr := reread()
	if rerr != nil {
		return fmt.Errorf("%w (and reading %s again for its ETag failed: %v)", reduce(err), path, reduce(rerr))
	}
	if fresh == "" {
		// The BMC wants a precondition but serves no ETag: any version.
		fresh = "*"
	}
	return send(fresh)
}

// postAction POSTs an action and waits for its task when the BMC answers
// 202 with one.
func postAction(ctx context.Context, api *gofish.APIClient, target string, payload any) error {
	resp, err := api.Post(target, payload)
	defer schemas.DeferredCleanupHTTPResponse(resp)
	if err != nil {
		return err
	}
	return followAccepted(ctx, api, resp, "POST "+target)
}

// postAccepted POSTs an action whose outcome the caller reads back itself
// (a reset: the jobs poll the power state), so a 202's task is followed
// only while the caller's deadline leaves time: a task still running
// then (a graceful shutdown's ends when the OS is down) means accepted,
// not failed. A task that ends in an error is still one.
func postAccepted(ctx context.Context, api *gofish.APIClient, target string, payload any, log func(msg string)) error {
	resp, err := api.Post(target, payload)
	defer schemas.DeferredCleanupHTTPResponse(resp)
	if err != nil {
		return err
	}
	follow, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		// Leave the caller a moment to hear the answer.
		follow, cancel = context.WithDeadline(ctx, d.Add(-min(time.Until(d)/4, 2*time.Second)))
	}
	defer cancel()
	err = followAccepted(follow, api, resp, "POST "+target)
	if err != nil && follow.Err() != nil && ctx.Err() == nil {
		log("the BMC accepted the request and its task is still running; its outcome is read back")
		return nil
	}
	return err
}

// taskTimeout bounds the wait for a task: BMC tasks for the actions this
// driver sends (reset, media) take seconds. The caller's deadline wins
// when it is sooner.
const taskTimeout = 2 * time.Minute

// taskPoll is the pause between two reads of a task monitor when the BMC
// gives no Retry-After.
var taskPoll = 500 * time.Millisecond

// followAccepted waits for the task of a 202 answer (DSP0266 §12.2): its
// monitor is the Location header (or, as some BMCs send it, the Task in the
// body names one). Other answers are done already.
func followAccepted(ctx context.Context, api *gofish.APIClient, resp *http.Response, what string) error {
	if resp == nil || resp.StatusCode != http.StatusAccepted {
		return nil
	}
	monitor := relPath(resp.Header.Get("Location"))
	var task doc
	if body, err := io.ReadAll(io.LimitReader(resp.Body, maxDoc)); err == nil && len(body) > 0 {
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			task = doc(m)
		}
	}
	if monitor == "" && task != nil {
		monitor = relPath(task.str("TaskMonitor"))
		if monitor == "" {
			monitor = relPath(task.str("@odata.id"))
		}
	}
	if monitor == "" {
		// Accepted with nothing to follow: the caller reads back what it
		// changed, which is the only proof there is.
		return nil
	}
	return followTask(ctx, api, monitor, what)
}

// followTask polls a task monitor (or a Task resource) until the task is
// done: the monitor answers something other than 202, or the Task's state
// is final. A task that ends in Exception, Killed or Cancelled is an
// error carrying the task's messages; one that is still running at the
// deadline is an error saying so.
func followTask(ctx context.Context, api *gofish.APIClient, monitor, what string) error {
	deadline := time.Now().Add(taskTimeout)
	for {
		resp, err := api.Get(monitor)
		status := 0
		var task doc
		var wait time.Duration
		if resp != nil {
			status = resp.StatusCode
			wait = retryAfter(resp.Header.Get("Retry-After"))
			if body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxDoc)); rerr == nil && len(body) > 0 {
				var m map[string]any
				if json.Unmarshal(body, &m) == nil {
					task = doc(m)
				}
			}
			schemas.DeferredCleanupHTTPResponse(resp)
		}
		switch {
		case err != nil && (statusOf(err) == http.StatusNotFound || statusOf(err) == http.StatusGone):
			// The monitor is gone: the task ended and its outcome was
			// taken (by us, a moment ago, on a retried request, or by the
			// BMC's own clean-up). What was changed is read back after.
			return nil
		case err != nil:
			return fmt.Errorf("%s: following its task %s: %w", what, monitor, reduce(err))
		}
		state, health := task.str("TaskState"), task.str("TaskStatus")
		switch {
		case strings.EqualFold(state, "Exception"), strings.EqualFold(state, "Killed"),
			strings.EqualFold(state, "Cancelled"), strings.EqualFold(state, "Interrupted"),
			strings.EqualFold(state, "Completed") && strings.EqualFold(health, "Critical"):
			return &bmc.Error{Kind: bmc.KindBMCError, Op: "task", Err: fmt.Errorf("%s: the BMC's task %s ended %s%s%s", what, monitor, state,
				map[bool]string{true: " (" + health + ")"}[health != "" && !strings.EqualFold(health, "OK")], taskMessages(task))}
		case status != http.StatusAccepted && (state == "" || strings.EqualFold(state, "Completed")):
			return nil
		case status != http.StatusAccepted && !taskRunning(state):
			return nil
		}
		if time.Now().After(deadline) {
			return &bmc.Error{Kind: bmc.KindBMCError, Op: "task", Err: fmt.Errorf("%s: the BMC's task %s is still %s after %s", what, monitor, orUnknown(state), taskTimeout)}
		}
		if wait <= 0 || wait > 10*time.Second {
			wait = taskPoll
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for its task %s: %w", what, monitor, ctx.Err())
		case <-time.After(wait):
		}
	}
}

func taskRunning(state string) bool {
	switch strings.ToLower(state) {
	case "new", "starting", "running", "pending", "suspended", "stopping", "cancelling", "service":
		return true
	}
	return false
}

func taskMessages(task doc) string {
	var msgs []string
	for _, m := range task.arr("Messages") {
		md, _ := m.(map[string]any)
		if s := doc(md).str("Message"); s != "" && len(msgs) < maxMessages {
			msgs = append(msgs, s)
		}
	}
	if len(msgs) == 0 {
		return ""
	}
	return ": " + strings.Join(msgs, "; ")
}

func retryAfter(v string) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return 0
}

func orUnknown(s string) string {
	if s == "" {
		return "running"
	}
	return s
}

// errNotApplied: the BMC accepted a change that did not show when read
// back.
var errNotApplied = errors.New("the BMC accepted the change but does not show it")
