package streams

import (
	"fmt"
	"strconv"
	"strings"
)

// MinServerVersion is the oldest nats-server that holds what Herald
// declares: RUNS allows message schedules (allow_msg_schedules), which
// nats-server has from 2.14 on — a workflow's wait is a scheduled message,
// and an older server refuses the stream or never fires the wait.
const MinServerVersion = "2.14.0"

// CheckServerVersion refuses a nats-server older than MinServerVersion,
// naming the version needed and the one found. version is what the server
// says of itself (nats.Conn.ConnectedServerVersion); versions compare as
// semantic versions, number by number (2.9 is older than 2.14), and a
// pre-release is older than its release (2.14.0-RC.1 before 2.14.0).
func CheckServerVersion(version string) error {
	found, ok := parseVersion(version)
	if !ok {
		return fmt.Errorf("nats-server version %q is not a version Herald can read: Herald needs nats-server %s or newer (message schedules)",
			version, MinServerVersion)
	}
	needed, _ := parseVersion(MinServerVersion)
	if found.less(needed) {
		return fmt.Errorf("nats-server %s is too old: Herald needs nats-server %s or newer (message schedules, for workflows' waits); upgrade the server",
			version, MinServerVersion)
	}
	return nil
}

// semver is a version's numbers and whether it is a pre-release.
type semver struct {
	nums       [3]int
	prerelease bool
}

// parseVersion reads MAJOR.MINOR.PATCH, with an optional leading "v", a
// "-pre-release" and a "+build" (ignored, as semver orders them).
func parseVersion(s string) (semver, bool) {
	s, _, _ = strings.Cut(strings.TrimPrefix(s, "v"), "+")
	core, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 || (hasPre && pre == "") {
		return semver{}, false
	}
	var v semver
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p != strconv.Itoa(n) {
			return semver{}, false
		}
		v.nums[i] = n
	}
	v.prerelease = hasPre
	return v, true
}

func (v semver) less(w semver) bool {
	for i := range v.nums {
		if v.nums[i] != w.nums[i] {
			return v.nums[i] < w.nums[i]
		}
	}
	return v.prerelease && !w.prerelease
}
