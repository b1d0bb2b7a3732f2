package ipmisim

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Serial is the machine's side of the simulated BMC's serial port, which
// ipmi_sim serves as Serial-over-LAN (lan.conf's sol "tcp:..." line):
// what is written here is what the machine prints, and Input is what SOL
// clients typed. ipmi_sim connects to it when it starts and again after
// a broken connection, so it listens before ipmi_sim starts.
type Serial struct {
	ln net.Listener

	mu    sync.Mutex
	cond  *sync.Cond
	conn  net.Conn
	input bytes.Buffer
	done  bool
}

func newSerial() (*Serial, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Serial{ln: ln}
	s.cond = sync.NewCond(&s.mu)
	go s.accept()
	return s, nil
}

func (s *Serial) addr() string { return s.ln.Addr().String() }

func (s *Serial) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.conn != nil {
			_ = s.conn.Close()
		}
		s.conn = c
		s.cond.Broadcast()
		s.mu.Unlock()
		go s.read(c)
	}
}

func (s *Serial) read(c net.Conn) {
	buf := make([]byte, 512)
	for {
		n, err := c.Read(buf)
		s.mu.Lock()
		s.input.Write(buf[:n])
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Connected reports whether ipmi_sim holds the serial port.
func (s *Serial) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// Write prints p on the machine's console. With nobody connected (ipmi_sim
// not yet started), it waits up to 10 s for ipmi_sim, as a UART does not:
// tests want every byte to count.
func (s *Serial) Write(p []byte) (int, error) {
	s.mu.Lock()
	deadline := time.Now().Add(10 * time.Second)
	for s.conn == nil && !s.done {
		if time.Now().After(deadline) {
			s.mu.Unlock()
			return 0, fmt.Errorf("ipmisim: ipmi_sim never connected to the serial port")
		}
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		s.mu.Lock()
	}
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return 0, io.ErrClosedPipe
	}
	return c.Write(p)
}

// Input returns everything SOL clients typed so far.
func (s *Serial) Input() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.input.String()
}

// WaitInput waits until what SOL clients typed contains sub.
func (s *Serial) WaitInput(sub string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if bytes.Contains([]byte(s.Input()), []byte(sub)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ipmisim: the serial port received %q, not %q", s.Input(), sub)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail copies what is appended to the file at path (a VM's serial log)
// to the serial port until stop closes, from the file's end as it is
// now: the machine's console as it prints from here on.
func (s *Serial) tail(path string, stop <-chan struct{}) {
	var off int64
	if st, err := os.Stat(path); err == nil {
		off = st.Size()
	}
	buf := make([]byte, 4096)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && st.Size() < off {
			off = 0 // truncated: a new log
		}
		for {
			n, err := f.ReadAt(buf, off)
			if n > 0 {
				if _, werr := s.Write(buf[:n]); werr != nil {
					break
				}
				off += int64(n)
			}
			if err != nil {
				break
			}
		}
		_ = f.Close()
	}
}

func (s *Serial) close() {
	s.mu.Lock()
	s.done = true
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.mu.Unlock()
	_ = s.ln.Close()
}
