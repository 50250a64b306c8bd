//go:build linux

package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// made says which parts of a lab a teardown removes.
type made struct{ record, nsA, nsB, link bool }

var madeAll = made{record: true, nsA: true, nsB: true, link: true}

// labCount numbers the labs this process names, for generated names.
var labCount atomic.Uint32

// generatedName returns "skb<pid>_<n>" with n in base 36 modulo 36*36, so that
// it stays within MaxNameLen for any pid up to 7 digits (pid_max is at most
// 2^22, proc(5)). A name still in use is skipped by claim.
func generatedName() string {
	n := labCount.Add(1) % (36 * 36)
	return "skb" + strconv.Itoa(os.Getpid()) + "_" + strconv.FormatUint(uint64(n), 36)
}

func recordPath(name string) string { return filepath.Join(recordDir(), name+".json") }

// claim picks the lab's name and writes its record, which fails if the name is
// taken. The record is written to a temporary file and linked into place, so
// that a reader never sees half of one.
func claim(opts Options) (record, error) {
	if err := os.MkdirAll(recordDir(), 0o755); err != nil {
		return record{}, fmt.Errorf("lab: new: %w%s", err, need(err, "CAP_DAC_OVERRIDE"))
	}
	start, _ := procStart(os.Getpid())
	try := func(name string) (record, error) {
		rec := newRecord(name, opts)
		rec.Options.Name = name
		rec.PID, rec.Start = os.Getpid(), start
		data, err := json.MarshalIndent(rec, "", "\t")
		if err != nil {
			return rec, err
		}
		tmp, err := os.CreateTemp(recordDir(), ".tmp-")
		if err != nil {
			return rec, err
		}
		defer os.Remove(tmp.Name())
		_, err = tmp.Write(append(data, '\n'))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return rec, err
		}
		return rec, os.Link(tmp.Name(), recordPath(name))
	}
	if opts.Name != "" {
		rec, err := try(opts.Name)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return rec, fmt.Errorf("lab: new %s: %w (remove it with `skb lab down --name %s`)", opts.Name, ErrExist, opts.Name)
			}
			return rec, fmt.Errorf("lab: new %s: record: %w", opts.Name, err)
		}
		return rec, nil
	}
	var err error
	for range 36 * 36 {
		var rec record
		if rec, err = try(generatedName()); err == nil {
			return rec, nil
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return record{}, fmt.Errorf("lab: new: record: %w", err)
}

// readRecord reads the record of the lab called name. A record that cannot be
// parsed (its process died while writing it, or someone edited it) still names
// the lab's parts, which follow from the name; it has no owner.
func readRecord(name string) (record, error) {
	if !validName(name) {
		return record{}, fmt.Errorf("%w: %q is not a lab name", ErrNotFound, name)
	}
	data, err := os.ReadFile(recordPath(name))
	if errors.Is(err, os.ErrNotExist) {
		return record{}, fmt.Errorf("%w (no %s)", ErrNotFound, recordPath(name))
	}
	if err != nil {
		return record{}, err
	}
	var rec record
	if json.Unmarshal(data, &rec) != nil || rec.Name != name {
		rec = newRecord(name, Options{Name: name})
	}
	return rec, nil
}

// teardown removes the parts of rec's lab that m names, skipping parts already
// gone, and returns the errors it met joined.
func teardown(rec record, m made) error {
	var errs []error
	if m.link {
		if err := deleteVeth(rec.NSA, rec.IfA); err != nil {
			errs = append(errs, err)
		}
	}
	if m.nsA {
		if err := deleteNS(rec.NSA); err != nil {
			errs = append(errs, err)
		}
	}
	if m.nsB {
		if err := deleteNS(rec.NSB); err != nil {
			errs = append(errs, err)
		}
	}
	if m.record && len(errs) == 0 {
		if err := os.Remove(recordPath(rec.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("lab: remove record: %w", err))
		}
	}
	return errors.Join(errs...)
}

// deleteVeth deletes the veth end ifname in namespace nsName, and so the pair.
// Deleting it rather than leaving it to the namespace's end makes the removal
// synchronous and immune to a socket or process keeping the namespace alive.
func deleteVeth(nsName, ifname string) error {
	ns, err := netns.GetFromName(nsName)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lab: delete %s: open namespace %s: %w", ifname, nsName, err)
	}
	defer ns.Close()
	nh, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("lab: delete %s: netlink socket in %s: %w", ifname, nsName, err)
	}
	defer nh.Close()
	link, err := nh.LinkByName(ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("lab: delete %s: %w", ifname, err)
	}
	if err := nh.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("lab: delete %s: %w%s", ifname, err, need(err, "CAP_NET_ADMIN"))
	}
	return nil
}

// List returns the labs recorded in RecordDir (or RecordDirEnv's directory),
// sorted by name, with whether each one's process still runs (the pid exists
// and has the recorded start time, so a reused pid does not count). An empty
// or missing directory gives an empty list.
func List() ([]Info, error) {
	ents, err := os.ReadDir(recordDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab: list: %w", err)
	}
	var infos []Info
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validName(name) {
			continue
		}
		rec, err := readRecord(name)
		if err != nil {
			continue // removed meanwhile
		}
		infos = append(infos, Info{
			Name: rec.Name, NSA: rec.NSA, NSB: rec.NSB, IfA: rec.IfA, IfB: rec.IfB,
			PID: rec.PID, Alive: alive(rec.PID, rec.Start), Persist: rec.Options.Persist,
			Created: rec.Created, Options: rec.Options,
		})
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos, nil
}

// Cleanup removes the stale labs: those not made with Options.Persist whose
// process is gone, killed before it could Close them. Labs in use,
// persistent labs, and stale labs that processes still run inside (Procs:
// the children of a killed `skb lab exec --temp`, which may still be
// working there) are left alone. It returns the names it removed, and the
// errors it met joined.
func Cleanup() ([]string, error) {
	infos, err := List()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, i := range infos {
		if !i.Stale() {
			continue
		}
		if pids, err := Procs(i.Name); err != nil || len(pids) > 0 {
			continue
		}
		if err := Remove(i.Name); err != nil {
			if !errors.Is(err, ErrNotFound) { // another Cleanup was faster
				errs = append(errs, err)
			}
			continue
		}
		removed = append(removed, i.Name)
	}
	return removed, errors.Join(errs...)
}

// alive reports whether process pid runs and, if start is not 0, started at
// start (field 22 of /proc/<pid>/stat, clock ticks after boot).
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	s, err := procStart(pid)
	if err == nil {
		return start == 0 || s == start
	}
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	err = unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// procStart returns the start time of process pid from /proc/<pid>/stat
// (field 22, starttime, proc_pid_stat(5)).
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Field 2, the command, is in parentheses and may hold spaces and ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("lab: parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("lab: parse /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64)
}
