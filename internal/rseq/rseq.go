// Package rseq keeps glibc's restartable-sequence registration off the
// threads of a Go program that glibc loads.
//
// A Go binary built with cgo (the default where a C compiler is present,
// once any package imports net or os/user) is linked against glibc, and
// glibc 2.35 and later registers a struct rseq for every thread it starts
// (rseq(2); glibc's tunable glibc.pthread.rseq). Go does not use it, but
// the kernel then updates it on the way back to user space after every
// context switch (__rseq_handle_notify_resume): a receiver woken for each
// packet pays that on every wake-up. Measured on a blocking loopback
// ping-pong of 64-byte datagrams, skb pingpong processes at both ends:
// p50 16.67 µs with the registration off against 17.03 µs with it, six
// interleaved rounds; the C reference pingpong pair 16.10 against 16.43
// µs. A static Go binary (CGO_ENABLED=0) never registers.
//
// glibc reads its tunables once, when the program starts, so the only way
// to turn the registration off is to start again: Reexec executes the
// program anew with glibc.pthread.rseq=0 added to GLIBC_TUNABLES, and the
// new image puts the environment back as it was, so that programs it
// starts in turn inherit the caller's own.
package rseq

// Saved is the environment variable through which Reexec hands the
// caller's GLIBC_TUNABLES to the new image: "-" when it was unset, "+"
// followed by its value when it was set. Reexec removes it again.
const Saved = "SKB_SAVED_GLIBC_TUNABLES"

// Tunable is glibc's tunable that turns the registration off, as Reexec
// adds it to GLIBC_TUNABLES (colon-separated name=value pairs,
// tunables(7) in glibc's manual).
const Tunable = "glibc.pthread.rseq=0"

// tunableName is Tunable's name: a GLIBC_TUNABLES that sets it already
// (either way) is the user's choice, which Reexec keeps.
const tunableName = "glibc.pthread.rseq"
