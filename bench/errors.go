package bench

import "errors"

var (
	// ErrConfig is returned by Run for invalid Options: a negative duration
	// or run count, an unknown experiment name, CPUs out of range.
	ErrConfig = errors.New("bench: invalid options")

	// ErrNeedRoot is returned by Run when Options.Lab is set and the
	// process may not make network namespaces (lab.Privileged fails).
	ErrNeedRoot = errors.New("bench: the lab needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN)")

	// ErrNoRef is returned by Run when Options.RefDir is set but is not a
	// directory holding the C reference programs.
	ErrNoRef = errors.New("bench: no C reference programs")

	// ErrNoResult is the error of a run whose engines moved nothing, or
	// whose C program printed no figure.
	ErrNoResult = errors.New("bench: no result")
)
