package store

import (
	"errors"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// isUnavailable reports whether err says the store cannot be reached.
func isUnavailable(err error) bool {
	if s, ok := status.FromError(errors.Unwrap(err)); ok && s.Code() == codes.Unavailable {
		return true
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
		return true
	}
	return errors.Is(err, errUnavailable)
}

var errUnavailable = errors.New("it is down, without a leader, or out of reach")

// isNoSpace reports whether err is a full disk.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
