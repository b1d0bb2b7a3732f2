package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// startLimitKey carries a session command's --timeout: it bounds the
// start (the dial), not the session.
type startLimitKey struct{}

func withStartLimit(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, startLimitKey{}, d)
}

func startLimit(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(startLimitKey{}).(time.Duration); ok {
		return d
	}
	return cliTimeout
}

// consoleStdin is the console's keyboard: os.Stdin (tests replace it),
// and whether it is a terminal, which the console puts in raw mode.
var (
	consoleStdin    io.Reader = os.Stdin
	consoleTerminal           = func() (int, bool) {
		fd := int(os.Stdin.Fd())
		return fd, term.IsTerminal(fd)
	}
	consoleStderr io.Writer = os.Stderr
)

func nodeConsole(f *cliFlags) cliAction {
	watch := f.Bool("watch", false, "only watch: never take the console's keyboard")
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		dctx, cancel := context.WithTimeout(ctx, startLimit(ctx))
		con, err := c.DialConsole(dctx, pos[0], !*watch)
		cancel()
		if err != nil {
			return err
		}
		defer func() { _ = con.Close() }()
		return runConsole(ctx, con, *watch)
	}
}

// runConsole copies the console to stdout and the keyboard to the
// console until the user quits (~. at the start of a line, or the end of
// a piped stdin), the controller closes the session, or a signal.
//
// The console's output goes to the terminal as it is, escape sequences
// included: it is the machine's terminal, as with ssh or ipmitool sol
// (every other command escapes what the server says).
func runConsole(ctx context.Context, con *apiclient.Console, watch bool) error {
	out := rawWriter(stdout)
	fd, tty := consoleTerminal()
	nl := "\n"
	if tty && !watch {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("console: raw terminal: %w", err)
		}
		defer func() { _ = term.Restore(fd, old) }()
		nl = "\r\n" // raw mode: no newline translation
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(consoleStderr, "[%s]%s", fmt.Sprintf(format, args...), nl)
	}
	h := con.Hello
	switch {
	case h.Writer && tty:
		say("console of node %s: you have the keyboard; ~. quits", h.NodeName)
	case h.Writer:
		say("console of node %s: you have the keyboard", h.NodeName)
	default:
		say("console of node %s: %s", h.NodeName, h.Message)
	}
	// Ctrl-C is the machine's in raw mode; signals still end a piped or
	// watching session.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	errQuit := errors.New("quit")
	if !watch {
		go func() {
			cancel(typeInto(ctx, con, consoleStdin, h.Writer, errQuit))
		}()
	}
	// A quit closes the socket with a close frame (a Read whose context
	// ends drops the connection instead): the controller records that the
	// user closed it.
	go func() {
		<-ctx.Done()
		_ = con.Close()
	}()
	for {
		b, err := con.Read(context.WithoutCancel(ctx))
		if err == nil {
			if _, err := out.Write(b); err != nil {
				return err
			}
			continue
		}
		var notice *apiclient.ConsoleNotice
		if errors.As(err, &notice) {
			say("%s", notice.Message)
			continue
		}
		var closed *apiclient.ConsoleClosed
		switch {
		case ctx.Err() != nil:
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errQuit) && !errors.Is(cause, context.Canceled) {
				return cause
			}
			say("console closed")
			return nil
		case errors.As(err, &closed):
			say("%s", closed.Error())
			if closed.Code == 1000 {
				return nil
			}
			return fmt.Errorf("console of node %s: %s", h.NodeName, closed.Reason)
		default:
			return fmt.Errorf("console of node %s: %w", h.NodeName, err)
		}
	}
}

// typeInto sends what the user types to the console, watching for the
// escape: ~. at the start of a line quits, ~~ types one ~. It returns
// errQuit when the user quits or stdin ends.
func typeInto(ctx context.Context, con *apiclient.Console, in io.Reader, writer bool, errQuit error) error {
	buf := make([]byte, 1024)
	lineStart, tilde := true, false
	for {
		n, err := in.Read(buf)
		var send []byte
		for _, c := range buf[:n] {
			switch {
			case tilde:
				tilde = false
				switch c {
				case '.':
					if len(send) > 0 && writer {
						_ = con.Write(ctx, send)
					}
					return errQuit
				case '~':
					send = append(send, '~')
				default:
					send = append(send, '~', c)
				}
			case c == '~' && lineStart:
				tilde = true
				continue
			default:
				send = append(send, c)
			}
			lineStart = c == '\r' || c == '\n'
		}
		if len(send) > 0 && writer {
			if werr := con.Write(ctx, send); werr != nil {
				return werr
			}
		}
		if err != nil {
			return errQuit // the end of a piped stdin ends the session
		}
	}
}
