package jobs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// River's loop errors during an outage come out once per window, then
// once more with the count held back; job errors and info lines pass.
func TestRepeatLimit(t *testing.T) {
	var buf bytes.Buffer
	h := newRepeatLimit(slog.NewTextHandler(&buf, nil), time.Minute)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h.st.now = func() time.Time { return now }
	log := slog.New(h).With("component", "river")
	for i := 0; i < 100; i++ {
		log.Error("producer: Error fetching jobs", "err", "connection refused")
		log.Error("jobexecutor.JobExecutor: Job failed", "job_id", i)
		log.Info("producer: Producer job counts")
		now = now.Add(100 * time.Millisecond)
	}
	now = now.Add(time.Minute)
	log.Error("producer: Error fetching jobs", "err", "connection refused")
	out := buf.String()
	if n := strings.Count(out, "Error fetching jobs"); n != 2 {
		t.Errorf("a repeated loop error was logged %d times, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "repeated=99") {
		t.Errorf("the held-back count is missing:\n%s", out)
	}
	if n := strings.Count(out, "Job failed"); n != 100 {
		t.Errorf("job errors logged %d times, want all 100", n)
	}
	if n := strings.Count(out, "Producer job counts"); n != 100 {
		t.Errorf("info lines logged %d times, want all 100", n)
	}
}
