package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of utime and stime in /proc/PID/stat. Linux fixes
// USER_HZ at 100 for user space whatever the kernel's HZ.
const userHZ = 100

// cpuSeconds is the user+system CPU a process has used so far, from its own
// accounting in /proc/PID/stat (threads included, children not).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu of pid %d: malformed stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// After ')': state(3) ppid(4) ... utime(14) stime(15): indexes 11, 12.
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu of pid %d: short stat", pid)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu of pid %d: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return float64(ut+st) / userHZ, nil
}

// memKiB returns a process's current (VmRSS) and peak (VmHWM) resident set
// in KiB, from /proc/PID/status.
func memKiB(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("memory of pid %d: %w", pid, err)
	}
	defer func() { _ = f.Close() }() // read only: closing has nothing to report
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("memory of pid %d: %s %q: %w", pid, k, v, perr)
		}
		if k == "VmRSS" {
			rss = n
		} else {
			hwm = n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("memory of pid %d: %w", pid, err)
	}
	if hwm == 0 {
		return 0, 0, fmt.Errorf("memory of pid %d: no VmHWM (exited?)", pid)
	}
	return rss, hwm, nil
}

// cpuMeter measures the CPU several processes use over an interval.
type cpuMeter struct {
	pids  []int
	start []float64
}

func startCPU(pids ...int) (*cpuMeter, error) {
	m := &cpuMeter{pids: pids, start: make([]float64, len(pids))}
	for i, p := range pids {
		s, err := cpuSeconds(p)
		if err != nil {
			return nil, err
		}
		m.start[i] = s
	}
	return m, nil
}

// stop returns the CPU seconds each process used since startCPU.
func (m *cpuMeter) stop() ([]float64, error) {
	out := make([]float64, len(m.pids))
	for i, p := range m.pids {
		s, err := cpuSeconds(p)
		if err != nil {
			return nil, err
		}
		out[i] = s - m.start[i]
	}
	return out, nil
}
