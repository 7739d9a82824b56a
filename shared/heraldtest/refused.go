//go:build unix

package heraldtest

import (
	"fmt"
	"net"
	"syscall"
	"testing"
)

// RefusingPort returns a TCP port on ip that refuses every connection for as
// long as the test runs. A closed listener's port would not do: whoever binds
// next — another test's server — could take it between the close and the
// connection. A socket that is bound but never listens holds the port, and
// the kernel refuses connections to it.
func RefusingPort(t testing.TB, ip net.IP) (int, error) {
	t.Helper()
	family, sa := syscall.AF_INET, syscall.Sockaddr(&syscall.SockaddrInet4{})
	if ip4 := ip.To4(); ip4 != nil {
		sa = &syscall.SockaddrInet4{Addr: [4]byte(ip4)}
	} else {
		family, sa = syscall.AF_INET6, &syscall.SockaddrInet6{Addr: [16]byte(ip.To16())}
	}
	syscall.ForkLock.RLock() // as package net does: no child may inherit it
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return 0, fmt.Errorf("a socket for %s: %w", ip, err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, sa); err != nil {
		return 0, fmt.Errorf("binding %s: %w", ip, err)
	}
	bound, err := syscall.Getsockname(fd)
	if err != nil {
		return 0, fmt.Errorf("the port bound on %s: %w", ip, err)
	}
	switch a := bound.(type) {
	case *syscall.SockaddrInet4:
		return a.Port, nil
	case *syscall.SockaddrInet6:
		return a.Port, nil
	}
	return 0, fmt.Errorf("the port bound on %s: unexpected address %T", ip, bound)
}
