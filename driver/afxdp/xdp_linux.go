package afxdp

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/skbdev/skb/netdev"
)

// xskMapEntries is the size of the XSKMAP: one slot per receive queue, keyed
// by the queue index the program reads from the xdp_md. The map is made by
// the first device of the process on an interface and shared by the later
// ones, whatever queues they bind, so it holds the most queues a device
// has (4096, the kernel's limit on a veth's; a NIC has fewer), at 8 bytes
// a slot.
const xskMapEntries = 4096

// xdpMdRxQueueIndex is the offset of rx_queue_index in struct xdp_md
// (include/uapi/linux/bpf.h: data, data_end, data_meta, ingress_ifindex,
// rx_queue_index, each a __u32).
const xdpMdRxQueueIndex = 16

// xdpPass is the XDP_PASS action (enum xdp_action).
const xdpPass = 2

// xdpProgram is the program, its XSKMAP and the link that attaches it to
// one interface. The devices of one process on the queues of one interface
// share it (the kernel takes one XDP program per interface): each puts its
// socket in the map at its queue, and the last to leave detaches it.
type xdpProgram struct {
	key       xdpKey
	xsks      *ebpf.Map
	prog      *ebpf.Program
	lnk       link.Link
	mode      AttachMode
	nativeErr error // why native mode was refused, for AttachAuto
	refs      int   // devices using it; guarded by xdpShared.mu
}

// xdpKey names an interface across network namespaces: the namespace's
// device and inode numbers, and the interface index in it.
type xdpKey struct {
	nsDev, nsIno uint64
	ifindex      int
}

// xdpShared holds the programs attached by this process, by interface.
var xdpShared struct {
	mu sync.Mutex
	m  map[xdpKey]*xdpProgram
}

// redirectInsns returns the program, the same five instructions as the C
// reference's loader writes:
//
//	r2 = *(u32 *)(r1 + offsetof(struct xdp_md, rx_queue_index))
//	r1 = xsks                       (map pointer, ld_imm64)
//	r3 = XDP_PASS                   (action when the slot is empty)
//	call bpf_redirect_map(r1, r2, r3)
//	exit                            (r0: XDP_REDIRECT or XDP_PASS)
func redirectInsns(mapFD int) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, xdpMdRxQueueIndex, asm.Word),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
}

// attachXDP puts sockFD in the XSKMAP of the program attached by this
// process to ifindex at queue, first making the map, loading the program and
// attaching it in mode (AttachAuto: native, then generic) when there is none
// yet. The link goes away when the last device releases it or the process
// exits. It runs in the caller's network namespace. A program already
// attached in another mode than an explicit one asked is an error wrapping
// ErrConfig. On error nothing of this call stays attached or open.
func attachXDP(ifindex, queue, sockFD int, mode AttachMode) (*xdpProgram, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	key := xdpKey{nsDev: uint64(st.Dev), nsIno: uint64(st.Ino), ifindex: ifindex}
	xdpShared.mu.Lock()
	defer xdpShared.mu.Unlock()
	x := xdpShared.m[key]
	if x == nil {
		var err error
		if x, err = newXDP(key, queue, mode); err != nil {
			return nil, err
		}
		if xdpShared.m == nil {
			xdpShared.m = make(map[xdpKey]*xdpProgram)
		}
		xdpShared.m[key] = x
	} else if mode != AttachAuto && mode != x.mode {
		return nil, netdev.ConfigErrorf(ErrConfig, "another queue's program is attached in %s mode, not %s", x.mode, mode)
	}
	if err := x.xsks.Put(uint32(queue), uint32(sockFD)); err != nil {
		if x.refs == 0 {
			delete(xdpShared.m, key)
			x.close()
		}
		return nil, fmt.Errorf("xskmap update: %w", err)
	}
	x.refs++
	return x, nil
}

// newXDP makes the XSKMAP, loads the program and attaches it.
func newXDP(key xdpKey, queue int, mode AttachMode) (x *xdpProgram, err error) {
	x = &xdpProgram{key: key}
	defer func() {
		if err != nil {
			x.close()
			x = nil
		}
	}()
	x.xsks, err = ebpf.NewMap(&ebpf.MapSpec{
		Name:       "skb_xsks",
		Type:       ebpf.XSKMap,
		KeySize:    4,
		ValueSize:  4,
		MaxEntries: uint32(max(xskMapEntries, queue+1)),
	})
	if err != nil {
		return x, fmt.Errorf("create xskmap: %w", err)
	}
	x.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "skb_xsk_redir",
		Type:         ebpf.XDP,
		AttachType:   ebpf.AttachXDP,
		Instructions: redirectInsns(x.xsks.FD()),
		License:      "GPL",
	})
	if err != nil {
		return x, fmt.Errorf("load program: %w", err)
	}
	attach := func(flags link.XDPAttachFlags) error {
		l, err := link.AttachXDP(link.XDPOptions{Program: x.prog, Interface: key.ifindex, Flags: flags})
		if err == nil {
			x.lnk = l
		}
		return err
	}
	switch mode {
	case AttachNative:
		err = attach(link.XDPDriverMode)
		x.mode = AttachNative
	case AttachGeneric:
		err = attach(link.XDPGenericMode)
		x.mode = AttachGeneric
	default:
		x.mode = AttachNative
		if x.nativeErr = attach(link.XDPDriverMode); x.nativeErr != nil {
			x.mode = AttachGeneric
			if err = attach(link.XDPGenericMode); err != nil {
				// One line, both kept for errors.Is.
				err = fmt.Errorf("native: %w; generic: %w", x.nativeErr, err)
			}
		}
	}
	if err != nil {
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.EBUSY) {
			// The program is one per interface: a second process's
			// sockets, or another tool's program, find it taken.
			return x, fmt.Errorf("attach %s: %w (an XDP program is attached to the interface already: another process's AF_XDP sockets, or another tool's program; the sockets of one process share one program)", mode, err)
		}
		return x, fmt.Errorf("attach %s: %w", mode, err)
	}
	return x, nil
}

// release takes the socket at queue out of the map (closing the socket
// would too) and, for the last device, detaches the program and closes it
// and the map.
func (x *xdpProgram) release(queue int) error {
	xdpShared.mu.Lock()
	defer xdpShared.mu.Unlock()
	err := x.xsks.Delete(uint32(queue))
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		err = nil
	}
	if x.refs--; x.refs > 0 {
		return err
	}
	delete(xdpShared.m, x.key)
	return errors.Join(err, x.close())
}

// close detaches the program (closing the link) and closes the program and
// the map. It is idempotent.
func (x *xdpProgram) close() error {
	var errs []error
	if x.lnk != nil {
		errs = append(errs, x.lnk.Close())
		x.lnk = nil
	}
	if x.prog != nil {
		errs = append(errs, x.prog.Close())
		x.prog = nil
	}
	if x.xsks != nil {
		errs = append(errs, x.xsks.Close())
		x.xsks = nil
	}
	return errors.Join(errs...)
}
