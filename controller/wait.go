package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// jobPoll is how often --wait reads the job and its node.
var jobPoll = 500 * time.Millisecond

// isTerminal tells whether w is a terminal, where the progress line is
// redrawn in place; elsewhere (a pipe, a CI log) it is printed again only
// when it says something new.
func isTerminal(w io.Writer) bool {
	f, ok := rawWriter(w).(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// waitJob follows a node's job until it is finished, with a progress line:
// the job's state and attempts, its last error, and the node's power,
// maintenance and fault (a job of a node in maintenance waits, by design,
// and the line says so). It returns an error when the job was discarded
// or cancelled, or when ctx ends first.
func waitJob(ctx context.Context, c *apiclient.Client, w io.Writer, nodeID string, jobID int64, what string) error {
	tty := isTerminal(w)
	start := time.Now()
	shown := ""
	var line string
	for {
		job, node, err := readJob(ctx, c, nodeID, jobID)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return timedOut(w, tty, what, start, line)
		default:
			return err
		}
		line = progressLine(what, job, node)
		if tty {
			fmt.Fprint(rawWriter(w), "\r\033[K") // the CLI's own redraw; line goes through w
			fmt.Fprintf(w, "%s [%s]", line, time.Since(start).Round(time.Second))
		} else if line != shown {
			fmt.Fprintln(w, line)
		}
		shown = line
		switch job.State {
		case "completed":
			if tty {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s: done in %s; node power %s\n", what, time.Since(start).Round(100*time.Millisecond), node.PowerState)
			return nil
		case "discarded", "cancelled":
			if tty {
				fmt.Fprintln(w)
			}
			return fmt.Errorf("%s: job %d %s after %d attempt(s): %s", what, job.ID, job.State, job.Attempt, orNone(job.LastError))
		}
		t := time.NewTimer(jobPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return timedOut(w, tty, what, start, line)
		case <-t.C:
		}
	}
}

func readJob(ctx context.Context, c *apiclient.Client, nodeID string, jobID int64) (*api.Job, *api.Node, error) {
	jobs, err := c.ListJobs(ctx, apiclient.JobFilter{NodeID: nodeID})
	if err != nil {
		return nil, nil, fmt.Errorf("read job %d: %w", jobID, err)
	}
	var job *api.Job
	for i := range jobs {
		if jobs[i].ID == jobID {
			job = &jobs[i]
		}
	}
	if job == nil {
		return nil, nil, fmt.Errorf("job %d is not among the node's recent jobs any more; see: controller node events %s", jobID, nodeID)
	}
	node, err := c.GetNode(ctx, nodeID)
	if err != nil {
		return nil, nil, fmt.Errorf("read node %s: %w", nodeID, err)
	}
	return job, node, nil
}

// progressLine says where the job is, without the elapsed time (so a line
// that changes only in that is not printed again).
func progressLine(what string, job *api.Job, node *api.Node) string {
	attempt := fmt.Sprintf("attempt %d/%d", job.Attempt, job.MaxAttempts)
	if job.MaxAttempts == 0 { // a kind that retries until it succeeds
		attempt = fmt.Sprintf("attempt %d (retries until it succeeds)", job.Attempt)
	}
	line := fmt.Sprintf("%s: job %d %s, %s; node power %s", what, job.ID, job.State, attempt, node.PowerState)
	if node.Maintenance {
		line += "; node in maintenance, the job waits until it is cleared (" + node.MaintenanceReason + ")"
	}
	if node.Fault != "" {
		line += "; node fault " + string(node.Fault)
	}
	if job.LastError != "" && job.State != "completed" {
		line += "; last error: " + job.LastError
	}
	return line
}

func timedOut(w io.Writer, tty bool, what string, start time.Time, line string) error {
	if tty {
		fmt.Fprintln(w)
	}
	msg := fmt.Sprintf("%s: gave up waiting after %s (the job goes on in the controller)", what, time.Since(start).Round(time.Second))
	if line != "" {
		msg += "; last seen: " + line
	}
	return errors.New(msg)
}

func orNone(s string) string {
	if s == "" {
		return "no error recorded"
	}
	return s
}
