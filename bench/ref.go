package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skbdev/skb/internal/rseq"
	"github.com/skbdev/skb/lab"
)

// checkRefDir returns an error wrapping ErrNoRef unless dir holds, as
// executable files, the reference programs the selected experiments run
// (each Experiment's refProgs).
func checkRefDir(dir string, exps []Experiment) error {
	var missing, notExec []string
	for _, x := range exps {
		for _, p := range x.refProgs {
			if slices.Contains(missing, p) || slices.Contains(notExec, p) {
				continue
			}
			switch fi, err := os.Stat(filepath.Join(dir, p)); {
			case err != nil:
				missing = append(missing, p)
			case fi.IsDir() || fi.Mode()&0o111 == 0:
				notExec = append(notExec, p)
			}
		}
	}
	var why []string
	if len(missing) > 0 {
		why = append(why, "missing "+strings.Join(missing, ", "))
	}
	if len(notExec) > 0 {
		why = append(why, "not an executable file: "+strings.Join(notExec, ", "))
	}
	if len(why) > 0 {
		return fmt.Errorf("%w in %s: %s", ErrNoRef, dir, strings.Join(why, "; "))
	}
	return nil
}

// parseFigures finds the first line of out whose first word is word and
// returns its key=value pairs whose values are numbers, as the C reference
// programs print them ("RECV ... pps=274000 ...": decimal numbers, with a
// fraction or an exponent or neither). A value that is no such number
// ("10us", "inf", "0x1p4") is left out. Every figure the programs print is
// a count, a rate, a time or a CPU time, none negative: a negative one, or
// a key given twice, makes the line an error wrapping ErrNoResult, as a
// missing line does.
func parseFigures(out, word string) (map[string]float64, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != word {
			continue
		}
		m := map[string]float64{}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !decimal.MatchString(v) {
				continue
			}
			x, err := strconv.ParseFloat(v, 64)
			switch _, dup := m[k]; {
			case err != nil || math.IsInf(x, 0):
				// Out of float64's range (1e999): no figure.
				continue
			case dup:
				return nil, fmt.Errorf("%w: the %s line gives %s twice", ErrNoResult, word, k)
			case x < 0:
				return nil, fmt.Errorf("%w: the %s line gives %s=%s: want a number, 0 or more", ErrNoResult, word, k, v)
			}
			m[k] = x
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: no %s line in %q", ErrNoResult, word, oneLine(strings.TrimSpace(out)))
}

// decimal matches the numbers the C reference programs print: digits with
// an optional sign, fraction and exponent (274012, 1.9, 2.7e5).
var decimal = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`)

// cProc is a program the bench runs beside itself, pinned to a CPU: a C
// reference, or the skb tool.
type cProc struct {
	name     string
	cmd      *exec.Cmd
	out, err lockedBuffer
	done     chan struct{}
	waitErr  error
	// mu guards exited, set once the program has exited and its session
	// was killed, before Wait reaps it: kill then sends nothing, so no
	// signal can reach a process that took the reaped one's id.
	mu     sync.Mutex
	exited bool
}

// lockedBuffer is a bytes.Buffer safe for the writes of exec's copying
// goroutine and the reads of the caller. It keeps the first maxOutput
// bytes written and drops the rest (a program printing without end does
// not fill the bench's memory); Write still takes everything.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// maxOutput is the most of a program's standard output, and of its
// standard error, the bench keeps: the reference programs print one line.
const maxOutput = 1 << 20

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := maxOutput - l.b.Len(); room < len(p) {
		l.b.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startC starts the reference program name from e's reference directory on
// cpu, inside host's namespace when host is not nil. It is killed when ctx
// is done.
func (e *env) startC(ctx context.Context, cpu int, host *lab.Host, name string, args ...string) (*cProc, error) {
	return e.startProc(ctx, cpu, host, name, filepath.Join(e.refDir, name), args...)
}

// startProc starts the program at path, called name in errors, as startC
// starts a reference program.
func (e *env) startProc(ctx context.Context, cpu int, host *lab.Host, name, path string, args ...string) (*cProc, error) {
	return e.startProcEnv(ctx, cpu, host, name, path, nil, args...)
}

// startProcEnv is startProc with extra environment variables (KEY=value)
// after the bench's own.
func (e *env) startProcEnv(ctx context.Context, cpu int, host *lab.Host, name, path string, extra []string, args ...string) (*cProc, error) {
	argv := pinArgv(cpu, append([]string{path}, args...))
	var cmd *exec.Cmd
	if host != nil {
		cmd = host.Cmd(argv[0], argv[1:]...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	if extra != nil {
		cmd.Env = append(cmd.Environ(), extra...)
	}
	p := &cProc{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.err
	// A process the program left behind (outside its session, which
	// killGroup reaches) may hold the output pipes open: Wait gives up on
	// them this long after the program exited, with what they carried.
	cmd.WaitDelay = time.Second
	if err := startPinned(cpu, cmd); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		// Once the program has exited, and before Wait reaps it (its
		// session's id stays its own until then), what it started and
		// left running in its session is killed: nothing outlives a run.
		if waitExited(cmd.Process) {
			p.mu.Lock()
			killGroup(cmd.Process)
			p.exited = true
			p.mu.Unlock()
		}
		p.waitErr = cmd.Wait()
		if errors.Is(p.waitErr, exec.ErrWaitDelay) {
			p.waitErr = nil
		}
		close(p.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			p.kill()
		case <-p.done:
		}
	}()
	return p, nil
}

// kill stops the program (SIGKILL) if it still runs, with every process
// of its session (killGroup).
func (p *cProc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		killGroup(p.cmd.Process)
	}
}

// wait waits up to timeout for the program to exit, killing it then, and
// returns its standard output; the error says how it failed, with its
// standard error.
func (p *cProc) wait(timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.kill()
		<-p.done
		return p.out.String(), fmt.Errorf("%s did not finish within %v", p.name, timeout)
	}
	if p.waitErr != nil {
		if msg := strings.TrimSpace(p.err.String() + " " + p.out.String()); msg != "" {
			return p.out.String(), fmt.Errorf("%s: %w: %s", p.name, p.waitErr, oneLine(msg))
		}
		return p.out.String(), fmt.Errorf("%s: %w (it printed nothing)", p.name, p.waitErr)
	}
	return p.out.String(), nil
}

// stop kills the program and waits for it (a server that runs until
// killed).
func (p *cProc) stop() {
	p.kill()
	<-p.done
}

// waitStderr waits up to timeout until the program's standard error
// contains s (a "ready" line), and reports whether it did.
func (p *cProc) waitStderr(s string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(p.err.String(), s) {
			return true
		}
		select {
		case <-p.done:
			return false
		default:
		}
	}
	return false
}

// listeningPort waits for the line "skb: pingpong: listening on ADDR:PORT" that
// an skb server given port 0 prints on stderr once bound, and returns the
// port; or an error with p's output when p exits first or timeout passes.
func listeningPort(p *cProc, timeout time.Duration) (string, error) {
	re := regexp.MustCompile(`listening on \S*:(\d+)\n`)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(p.err.String()); m != nil {
			return m[1], nil
		}
		select {
		case <-p.done:
			return "", fmt.Errorf("%s exited before it was bound: %s", p.name, oneLine(strings.TrimSpace(p.err.String())))
		default:
		}
	}
	return "", fmt.Errorf("%s did not say its port within %v", p.name, timeout)
}

// freeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort() (string, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port), nil
}

// secsArg formats d as a C program's seconds argument.
func secsArg(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// cReady is how long a C receiver is given to bind before its sender
// starts, when it prints nothing to say it is ready.
const cReady = 150 * time.Millisecond

// cUDPRun runs udp_recv (receiver CPU) and udp_send (sender CPU) over
// loopback for e.dur with the given extra flags, and returns their pps.
func cUDPRun(ctx context.Context, e *env, sendArgs, recvArgs []string) (sample, error) {
	port, err := freeUDPPort()
	if err != nil {
		return nil, err
	}
	recv, err := e.startC(ctx, e.receiver, nil, "udp_recv",
		append([]string{"-a", "127.0.0.1", "-p", port, "-i", "300", "-t", secsArg(e.dur + 5*time.Second)}, recvArgs...)...)
	if err != nil {
		return nil, err
	}
	defer recv.stop()
	time.Sleep(cReady)
	s, err := e.cSendRecv(ctx, recv, nil, "udp_send",
		append([]string{"-d", "127.0.0.1", "-p", port, "-t", secsArg(e.dur)}, sendArgs...)...)
	if err == nil && slices.Contains(recvArgs, "-n") {
		// A spinning receiver spends its whole process's CPU time, the
		// wait for the sender (cReady) and the idle stop (-i) included:
		// per datagram that is no measure of its receive path.
		delete(s, "rx cpu")
	}
	return s, err
}

// cSendRecv runs the C sender name with args on the sender CPU, inside
// host's namespace when host is not nil, until it exits (e.dur and 10
// seconds at most), then waits for the C receiver recv, which the caller
// started and stops, and returns the figures of both (recvFigures). When
// the sender does not start it returns that error at once.
func (e *env) cSendRecv(ctx context.Context, recv *cProc, host *lab.Host, name string, args ...string) (sample, error) {
	send, err := e.startC(ctx, e.sender, host, name, args...)
	if err != nil {
		return nil, err
	}
	sout, serr := send.wait(e.dur + 10*time.Second)
	return recvFigures(recv, sout, serr)
}

// recvFigures waits up to 6 seconds for the C receiver recv once its sender
// is done, and returns cFigures of the sender's output sout and the
// receiver's; serr is the sender's error, joined with the receiver's.
func recvFigures(recv *cProc, sout string, serr error) (sample, error) {
	rout, rerr := recv.wait(6 * time.Second)
	if err := errors.Join(serr, rerr); err != nil {
		return nil, err
	}
	return cFigures(sout, rout)
}

// cFigures returns the tx and rx pps of a C sender's and receiver's output,
// and the CPU time each process used per packet.
func cFigures(sendOut, recvOut string) (sample, error) {
	sf, err := parseFigures(sendOut, "SEND")
	if err != nil {
		return nil, err
	}
	rf, err := parseFigures(recvOut, "RECV")
	if err != nil {
		return nil, err
	}
	tx, err := ppsOf(sf, "SEND", "the C sender")
	if err != nil {
		return nil, err
	}
	rx, err := ppsOf(rf, "RECV", "the C receiver")
	if err != nil {
		return nil, err
	}
	s := sample{"tx pps": tx, "rx pps": rx}
	cpuPer(s, "tx cpu", sf, "pkts")
	cpuPer(s, "rx cpu", rf, "dgrams")
	return s, nil
}

// ppsOf returns the pps figure of a reference program's output line word,
// parsed as f, or an error wrapping ErrNoResult naming who when it is
// missing, under 1 (the program counted nothing: a rate of 0 would make
// every ratio against it meaningless) or over maxRefPPS (no path here
// moves that many: the line is not a measurement).
func ppsOf(f map[string]float64, word, who string) (float64, error) {
	v, ok := f["pps"]
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: %s's %s line has no pps=", ErrNoResult, who, word)
	case v < 1:
		return 0, fmt.Errorf("%w: %s counted nothing (%s pps=%v)", ErrNoResult, who, word, v)
	case v > maxRefPPS:
		return 0, fmt.Errorf("%w: %s's %s line gives pps=%v, over %v: not a measurement", ErrNoResult, who, word, v, float64(maxRefPPS))
	}
	return v, nil
}

// maxRefPPS bounds the packet rates the bench takes from a reference
// program: a billion a second, far over any path it measures (tens of
// millions with GRO).
const maxRefPPS = 1e9

// cpuPer sets s[metric] to the CPU time (cpu_user + cpu_sys, in seconds) of
// a C program's figures f per packet counted in f[count], in nanoseconds;
// it leaves the metric out when f lacks either CPU figure or the count.
func cpuPer(s sample, metric string, f map[string]float64, count string) {
	u, uok := f["cpu_user"]
	y, yok := f["cpu_sys"]
	if n := f[count]; n > 0 && uok && yok {
		s[metric] = (u + y) * 1e9 / n
	}
}

// udpProcRun runs the skb tool on UDP loopback as the C references run:
// skb sink (with sinkArgs) on the receiver CPU and skb pktgen of 64-byte
// datagrams (with genArgs) on the sender CPU, each a process of its own,
// pinned, in a session of its own.
func udpProcRun(sinkArgs, genArgs []string) func(context.Context, *env) (sample, error) {
	return func(ctx context.Context, e *env) (sample, error) {
		recv, err := e.startProc(ctx, e.receiver, nil, "skb sink", e.opts.Tool, append([]string{"sink",
			"--listen", "127.0.0.1:0", "--duration", secsArg(e.dur + 5*time.Second), "--idle", "300ms", "--json"}, sinkArgs...)...)
		if err != nil {
			return nil, err
		}
		defer recv.stop()
		port, err := listeningPort(recv, 5*time.Second)
		if err != nil {
			return nil, err
		}
		send, err := e.startProc(ctx, e.sender, nil, "skb pktgen", e.opts.Tool, append([]string{"pktgen",
			"--dst", "127.0.0.1:" + port, "--size", "64", "--duration", secsArg(e.dur), "--json"}, genArgs...)...)
		if err != nil {
			return nil, err
		}
		defer send.stop()
		sout, serr := send.wait(e.dur + 10*time.Second)
		return pairFigures(sout, serr, recv)
	}
}

// pairFigures returns the rates and CPU times per packet of an skb pktgen
// process whose output and error are sout and serr and of the skb sink
// process recv, which it waits for (6 seconds at most) once pktgen is done.
// A sink or pktgen that counted nothing is ErrNoResult.
func pairFigures(sout string, serr error, recv *cProc) (sample, error) {
	if serr != nil {
		return nil, serr // the caller's deferred stop ends the sink
	}
	rout, rerr := recv.wait(6 * time.Second)
	if rerr != nil {
		return nil, rerr
	}
	st, err := toolResult(sout, "skb pktgen")
	if err != nil {
		return nil, err
	}
	rt, err := toolResult(rout, "skb sink")
	if err != nil {
		return nil, err
	}
	if st.Packets == 0 || rt.Packets == 0 {
		return nil, fmt.Errorf("%w: skb pktgen sent %d packets, skb sink counted %d", ErrNoResult, st.Packets, rt.Packets)
	}
	return sample{
		mTxPPS.Name: st.PPS, mTxCPU.Name: st.cpuPer(),
		mRxPPS.Name: rt.PPS, mRxCPU.Name: rt.cpuPer(),
	}, nil
}

// pingProcRun runs the skb tool's ping-pong as C's runs: `skb pingpong
// --server` and `skb pingpong --connect` as processes of their own, each
// pinned to its CPU in a session of its own, busy-polling when busy. The
// server binds the wildcard address and answers loopback only (--from).
func pingProcRun(iters int, busy bool) func(context.Context, *env) (sample, error) {
	return func(ctx context.Context, e *env) (sample, error) {
		// The server binds a port the kernel picks and says which.
		sargs := []string{"pingpong", "--server", "--listen", "0.0.0.0:0", "--from", "127.0.0.0/8",
			"--duration", secsArg(4*e.dur + 10*time.Second)}
		if busy {
			sargs = append(sargs, "--busy-poll")
		}
		srv, err := e.startProc(ctx, e.receiver, nil, "skb pingpong --server", e.opts.Tool, sargs...)
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		port, err := listeningPort(srv, 5*time.Second)
		if err != nil {
			return nil, err
		}
		cargs := []string{"pingpong", "--connect", "127.0.0.1:" + port, "-n", strconv.Itoa(iters), "-s", "64",
			"--duration", secsArg(4*e.dur + 5*time.Second), "--json"}
		if busy {
			cargs = append(cargs, "--busy-poll")
		}
		cli, err := e.startProc(ctx, e.sender, nil, "skb pingpong", e.opts.Tool, cargs...)
		if err != nil {
			return nil, err
		}
		out, err := cli.wait(4*e.dur + 10*time.Second)
		if err != nil {
			return nil, withServerExit(err, srv)
		}
		for _, line := range strings.Split(out, "\n") {
			var r struct {
				Type string  `json:"type"`
				P50  float64 `json:"p50_us"`
				P99  float64 `json:"p99_us"`
				Mean float64 `json:"mean_us"`
			}
			if json.Unmarshal([]byte(line), &r) == nil && r.Type == "result" && r.P50 > 0 {
				return sample{"p50": r.P50, "p99": r.P99, "mean": r.Mean}, nil
			}
		}
		return nil, fmt.Errorf("%w: no result object in skb pingpong's output %q", ErrNoResult, oneLine(strings.TrimSpace(out)))
	}
}

// rseqOffEnv returns the GLIBC_TUNABLES setting that runs a program without
// glibc's rseq registration: the bench's own tunables, if any, and
// rseq.Tunable after them. Under a C library that registers nothing (glibc
// before 2.35, musl) it changes nothing.
func rseqOffEnv() string {
	if v := os.Getenv("GLIBC_TUNABLES"); v != "" {
		return "GLIBC_TUNABLES=" + v + ":" + rseq.Tunable
	}
	return "GLIBC_TUNABLES=" + rseq.Tunable
}

// cPingRun runs the C pingpong server (receiver CPU) and client (sender
// CPU) over loopback, iters round trips of 64 bytes, blocking or
// busy-polling (-y on both sides), with extra environment variables
// (KEY=value) for both.
func cPingRun(ctx context.Context, e *env, iters int, busy bool, extra []string) (sample, error) {
	port, err := freeUDPPort()
	if err != nil {
		return nil, err
	}
	sargs := []string{"-S", "-p", port}
	cargs := []string{"-c", "-d", "127.0.0.1", "-p", port, "-n", strconv.Itoa(iters), "-s", "64"}
	if busy {
		sargs = append(sargs, "-y")
		cargs = append(cargs, "-y")
	}
	path := filepath.Join(e.refDir, "pingpong")
	srv, err := e.startProcEnv(ctx, e.receiver, nil, "pingpong", path, extra, sargs...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	time.Sleep(cReady)
	cli, err := e.startProcEnv(ctx, e.sender, nil, "pingpong", path, extra, cargs...)
	if err != nil {
		return nil, err
	}
	out, err := cli.wait(4*e.dur + 10*time.Second)
	if err != nil {
		return nil, withServerExit(err, srv)
	}
	f, err := parseFigures(out, "PINGPONG")
	if err != nil {
		return nil, err
	}
	if f["p50_us"] <= 0 {
		return nil, fmt.Errorf("%w: the C ping-pong's PINGPONG line has no p50_us (as a decimal number over 0)", ErrNoResult)
	}
	s := sample{"p50": f["p50_us"]}
	for k, m := range map[string]string{"p99_us": "p99", "mean_us": "mean"} {
		if v, ok := f[k]; ok {
			s[m] = v
		}
	}
	if err := checkRoundTrips(f, s); err != nil {
		return nil, err
	}
	return s, nil
}

// checkRoundTrips returns an error wrapping ErrNoResult when the C
// ping-pong's figures f (its PINGPONG line, in µs), taken into s, cannot be
// a measurement: no round trips (n=0), a time outside minRefMicros to
// maxRefMicros, or a p99 under the p50.
func checkRoundTrips(f map[string]float64, s sample) error {
	if n, ok := f["n"]; ok && n < 1 {
		return fmt.Errorf("%w: the C ping-pong's PINGPONG line gives n=%v: no round trips", ErrNoResult, n)
	}
	for _, m := range []string{"p50", "p99", "mean"} {
		if v, ok := s[m]; ok && (v < minRefMicros || v > maxRefMicros) {
			return fmt.Errorf("%w: the C ping-pong's PINGPONG line gives %s_us=%v: want %v to %v µs", ErrNoResult, m, v, minRefMicros, float64(maxRefMicros))
		}
	}
	if p99, ok := s["p99"]; ok && p99 < s["p50"] {
		return fmt.Errorf("%w: the C ping-pong's PINGPONG line gives p99_us=%v under its p50_us=%v", ErrNoResult, p99, s["p50"])
	}
	return nil
}

// minRefMicros and maxRefMicros bound the round-trip times, in µs, the
// bench takes from the C ping-pong: 10 ns to 1000 s.
const (
	minRefMicros = 0.01
	maxRefMicros = 1e9
)

// withServerExit returns err, a ping-pong client's failure, with the
// server's standard error added when the server had exited by then: its
// failure (a port in use) is then the cause, and the client's the symptom.
func withServerExit(err error, srv *cProc) error {
	select {
	case <-srv.done:
		if msg := strings.TrimSpace(srv.err.String()); msg != "" {
			return fmt.Errorf("%w (the server had exited: %s)", err, oneLine(msg))
		}
		return fmt.Errorf("%w (the server had exited)", err)
	default:
		return err
	}
}
