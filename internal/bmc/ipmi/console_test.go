package ipmi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
)

// collector reads a console into a buffer until it fails.
type collector struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	err  error
	done chan struct{}
}

func collect(c io.Reader) *collector {
	col := &collector{done: make(chan struct{})}
	go func() {
		defer close(col.done)
		b := make([]byte, 256)
		for {
			n, err := c.Read(b)
			col.mu.Lock()
			col.buf.Write(b[:n])
			if err != nil {
				col.err = err
			}
			col.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return col
}

func (c *collector) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func (c *collector) wait(t *testing.T, sub string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(c.String(), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("console output %q lacks %q", c.String(), sub)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConsole streams the machine's serial port through ipmi_sim's
// Serial-over-LAN both ways: what the machine prints arrives in order,
// keystrokes reach the machine, a second console takes the first one's
// place (a real BMC has one SOL session), and Close deactivates.
func TestConsole(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	o := newOpener(t, Options{Timeout: 5 * time.Second})
	ep := endpoint(sim)
	ep.CipherSuite = 3
	cl := open(t, o, ep)

	con, err := cl.OpenConsole(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("OpenConsole: %v", err)
	}
	out := collect(con)
	var want strings.Builder
	for i := range 40 {
		line := fmt.Sprintf("[%6d.000000] kernel line %d of the machine\r\n", i, i)
		want.WriteString(line)
		if _, err := sim.Serial.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	out.wait(t, "kernel line 39 of", 10*time.Second)
	if !strings.Contains(out.String(), want.String()) {
		t.Fatalf("console output is not what the machine printed, in order:\n%q", out.String())
	}
	if _, err := con.Write([]byte("root\r")); err != nil {
		t.Fatal(err)
	}
	if err := sim.Serial.WaitInput("root\r", 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// Another client (a second controller, an operator's ipmitool) takes
	// the console: the first one's Read fails, the second one works.
	cl2 := open(t, newOpener(t, Options{Timeout: 5 * time.Second}), ep)
	con2, err := cl2.OpenConsole(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("second OpenConsole: %v", err)
	}
	defer con2.Close()
	out2 := collect(con2)
	if _, err := sim.Serial.Write([]byte("login: ")); err != nil {
		t.Fatal(err)
	}
	out2.wait(t, "login: ", 10*time.Second)
	select {
	case <-out.done:
		if out.err == nil || out.err == io.EOF {
			t.Errorf("the console taken over ended with %v, want an error saying so", out.err)
		}
		t.Logf("first console, taken over: %v", out.err)
	case <-time.After(10 * time.Second):
		t.Errorf("the first console still reads after another took it over")
	}
	_ = con.Close()

	if err := con2.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-out2.done:
		if out2.err != io.EOF && out2.err != io.ErrClosedPipe {
			t.Errorf("Read after Close: %v, want EOF", out2.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still blocks after Close")
	}
	// Closed means deactivated: a new console needs no takeover (the log
	// says so when it does; here only that it opens).
	con3, err := cl.OpenConsole(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("OpenConsole after Close: %v", err)
	}
	_ = con3.Close()
}

// TestConsoleUnreachable: a BMC that does not answer fails OpenConsole
// within the timeout, classified, without the password.
func TestConsoleUnreachable(t *testing.T) {
	t.Parallel()
	o := newOpener(t, Options{Timeout: 2 * time.Second})
	cl := open(t, o, bmc.Endpoint{Driver: "ipmi", Address: "ipmi://127.0.0.1:9", Username: "admin", Password: "secret-pw-1", CipherSuite: 3})
	start := time.Now()
	_, err := cl.OpenConsole(context.Background())
	if err == nil {
		t.Fatal("OpenConsole to nothing succeeded")
	}
	if bmc.KindOf(err) != bmc.KindUnreachable || strings.Contains(err.Error(), "secret-pw-1") {
		t.Fatalf("error %v (kind %s)", err, bmc.KindOf(err))
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("OpenConsole took %s with a 2 s timeout", d)
	}
}

// TestConsoleBMCGoesSilent: a BMC that stops answering in the middle of
// a console fails its Read within the timeout (a classified error,
// without the password), and Close then returns within its bound (the
// Deactivate Payload and Close Session to the silent BMC time out).
func TestConsoleBMCGoesSilent(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	r := newRelay(t, sim.Port)
	ep := endpoint(sim)
	ep.Address = r.address()
	ep.CipherSuite = 3
	cl := open(t, newOpener(t, Options{Timeout: 2 * time.Second}), ep)
	con, err := cl.OpenConsole(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("OpenConsole: %v", err)
	}
	out := collect(con)
	if _, err := sim.Serial.Write([]byte("before\r\n")); err != nil {
		t.Fatal(err)
	}
	out.wait(t, "before", 10*time.Second)
	r.setDrop(dropAll)
	start := time.Now()
	select {
	case <-out.done:
		if out.err == nil || out.err == io.EOF || bmc.KindOf(out.err) != bmc.KindUnreachable || strings.Contains(out.err.Error(), sim.Password) {
			t.Errorf("Read of a silent BMC's console: %v (kind %s)", out.err, bmc.KindOf(out.err))
		}
		t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), out.err)
	case <-time.After(15 * time.Second):
		t.Fatal("Read still blocks 15 s after the BMC went silent")
	}
	start = time.Now()
	_ = con.Close()
	if d := time.Since(start); d > 3*closeTimeout+time.Second {
		t.Errorf("Close after the stream failed took %s", d)
	}
}
