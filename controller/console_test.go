package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// consoleBuffer is a bytes.Buffer the CLI writes and the test reads.
type consoleBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *consoleBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *consoleBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCLIConsole: `controller node console` against a real controller and
// an IPMI node on ipmi_sim, stdin and stdout piped: a watcher (--watch)
// and a writer see what the machine prints; the writer's keys reach the
// machine's serial port, ~. at the start of a line quits (and is not
// sent); a session whose token is revoked ends with the reason; each
// session is an event; the BMC password appears nowhere.
func TestCLIConsole(t *testing.T) {
	ipmisim.SkipIfUnavailable(t)
	env := testenv.Start(t, testenv.Options{Systems: 1, BMCTimeout: 5 * time.Second})
	bmc := ipmisim.Start(t)
	body := fmt.Sprintf(`{"name":"con-0","driver":"ipmi","resource_class":"vm","bmc":{"address":%q,"username":%q,"password":%q,"cipher_suite":3}}`,
		bmc.Address(), bmc.Username, bmc.Password)
	req, _ := http.NewRequest("POST", env.URL+"/v1/nodes", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("enroll: %v %v", resp, err)
	}
	_ = resp.Body.Close()

	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	out, errs := &consoleBuffer{}, &consoleBuffer{}
	oldOut, oldIn, oldTerm, oldErr := stdout, consoleStdin, consoleTerminal, consoleStderr
	t.Cleanup(func() { stdout, consoleStdin, consoleTerminal, consoleStderr = oldOut, oldIn, oldTerm, oldErr })
	stdout, consoleStderr = out, errs
	consoleTerminal = func() (int, bool) { return -1, false }
	keys, typed := io.Pipe()
	consoleStdin = keys

	ctx := context.Background()
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- runNode(wctx, []string{"console", "con-0", "--watch"}) }()
	waitFor(t, "the watcher's greeting", 20*time.Second, func() bool { return strings.Contains(errs.String(), "watching") })
	wrote := make(chan error, 1)
	go func() { wrote <- runNode(ctx, []string{"console", "con-0"}) }()
	waitFor(t, "the writer's greeting", 20*time.Second, func() bool { return strings.Contains(errs.String(), "you have the keyboard") })

	if _, err := bmc.Serial.Write([]byte("\r\nDebian GNU/Linux 13 con-0 ttyS0\r\n\r\ncon-0 login: ")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the login prompt on both sessions", 20*time.Second, func() bool { return strings.Count(out.String(), "con-0 login: ") == 2 })
	if _, err := typed.Write([]byte("root\r")); err != nil {
		t.Fatal(err)
	}
	if err := bmc.Serial.WaitInput("root\r", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// ~~ types a ~; ~. at the start of a line quits, unsent.
	if _, err := typed.Write([]byte("~~x\r~.")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("the writer quit with ~.: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("~. did not end the session")
	}
	if err := bmc.Serial.WaitInput("root\r~x\r", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if in := bmc.Serial.Input(); strings.Contains(in, "~.") || strings.Contains(in, "~~") {
		t.Fatalf("the escape reached the machine: %q", in)
	}
	stopWatch()
	if err := <-watched; err != nil {
		t.Fatalf("watcher: %v", err)
	}

	// A session whose token is revoked ends, and says why.
	_, secret, err := env.App.Service.CreateToken(ctx, env.Admin(), service.TokenInput{Name: "carol", Role: baremetal.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BAREMETAL_TOKEN", secret)
	keys2, typed2 := io.Pipe()
	defer typed2.Close()
	consoleStdin = keys2
	revoked := make(chan error, 1)
	go func() { revoked <- runNode(ctx, []string{"console", "con-0"}) }()
	waitFor(t, "carol's greeting", 20*time.Second, func() bool { return strings.Count(errs.String(), "you have the keyboard") == 2 })
	toks, _, err := env.App.Store.ListTokens(ctx, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if tok.Name == "carol" {
			if err := env.App.Service.DeleteToken(ctx, env.Admin(), tok.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case err := <-revoked:
		if err == nil || !strings.Contains(err.Error(), "revoked") {
			t.Fatalf("revoked session ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a revoked token's console stayed open")
	}

	// Events: who, when, writer or watcher; the password nowhere.
	var evs []*baremetal.Event
	waitFor(t, "six console events", 10*time.Second, func() bool {
		all, _, err := env.App.Store.ListEvents(ctx, nodeID(t, env, "con-0"), store.Page{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		evs = evs[:0]
		for _, e := range all {
			if strings.HasPrefix(e.Type, "console_") {
				evs = append(evs, e)
			}
		}
		return len(evs) == 6
	})
	var text strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&text, "%s %s %s\n", e.Actor, e.Type, e.Message)
	}
	for _, want := range []string{"console_opened interactive console opened, watching", "console_opened interactive console opened, with the keyboard",
		"carol", "the token was revoked", "closed by the client"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("console events lack %q:\n%s", want, text.String())
		}
	}
	for what, s := range map[string]string{"stdout": out.String(), "stderr": errs.String(), "events": text.String()} {
		if strings.Contains(s, bmc.Password) {
			t.Errorf("the BMC password appears in the console's %s", what)
		}
	}
}

func nodeID(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	n, err := env.App.Store.GetNode(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return n.ID
}
