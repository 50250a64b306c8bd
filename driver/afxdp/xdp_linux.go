package afxdp

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// xskMapEntries is the size of the XSKMAP: one slot per receive queue, keyed
// by the queue index the program reads from the xdp_md.
const xskMapEntries = 64

// xdpMdRxQueueIndex is the offset of rx_queue_index in struct xdp_md
// (include/uapi/linux/bpf.h: data, data_end, data_meta, ingress_ifindex,
// rx_queue_index, each a __u32).
const xdpMdRxQueueIndex = 16

// xdpPass is the XDP_PASS action (enum xdp_action).
const xdpPass = 2

// xdpProgram is the program, its XSKMAP and the link that attaches it.
type xdpProgram struct {
	xsks *ebpf.Map
	prog *ebpf.Program
	lnk  link.Link
	mode AttachMode
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

// attachXDP makes an XSKMAP holding sockFD at queue, loads the redirect
// program and attaches it to ifindex in mode (AttachAuto: native, then
// generic), with a BPF link, so that it goes away when the link is closed or
// the process exits. It runs in the caller's network namespace. On error
// nothing stays attached or open.
func attachXDP(ifindex, queue, sockFD int, mode AttachMode) (x *xdpProgram, nativeErr error, err error) {
	x = &xdpProgram{}
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
		return x, nil, fmt.Errorf("create xskmap: %w", err)
	}
	if err = x.xsks.Put(uint32(queue), uint32(sockFD)); err != nil {
		return x, nil, fmt.Errorf("xskmap update: %w", err)
	}
	x.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "skb_xsk_redir",
		Type:         ebpf.XDP,
		AttachType:   ebpf.AttachXDP,
		Instructions: redirectInsns(x.xsks.FD()),
		License:      "GPL",
	})
	if err != nil {
		return x, nil, fmt.Errorf("load program: %w", err)
	}
	attach := func(flags link.XDPAttachFlags) error {
		l, err := link.AttachXDP(link.XDPOptions{Program: x.prog, Interface: ifindex, Flags: flags})
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
		if nativeErr = attach(link.XDPDriverMode); nativeErr != nil {
			x.mode = AttachGeneric
			err = attach(link.XDPGenericMode)
			if err != nil {
				err = errors.Join(nativeErr, err)
			}
		}
	}
	if err != nil {
		return x, nil, fmt.Errorf("attach %s: %w", mode, err)
	}
	return x, nativeErr, nil
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
