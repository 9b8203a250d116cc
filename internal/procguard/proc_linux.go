package procguard

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// parents reads /proc and returns every visible process as pid → parent
// pid. Processes that vanish while it reads are skipped.
func parents() (map[int]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return nil, err
	}
	out := make(map[int]int, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			out[pid] = ppid
		}
	}
	return out, nil
}

// parentOf reads the parent pid from /proc/<pid>/stat: the fourth field,
// after the command name in parentheses (which may itself hold spaces and
// parentheses, hence the last ')').
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// descendants returns every process below pid in table, children before
// grandchildren.
func descendants(table map[int]int, pid int) []int {
	children := map[int][]int{}
	for p, pp := range table {
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if c != pid {
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// userTasks counts the tasks (processes and their threads) whose real uid
// is uid, among those this process can see: what RLIMIT_NPROC counts.
func userTasks(uid int) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	n := 0
	for _, name := range names {
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		n += tasksOf(name, uid)
	}
	return n
}

// tasksOf is the Threads: count of /proc/<pid>/status when its real uid
// is uid, else 0.
func tasksOf(pid string, uid int) int {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	mine, threads := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Uid:"):
			f := strings.Fields(line[len("Uid:"):])
			mine = len(f) > 0 && f[0] == strconv.Itoa(uid)
		case strings.HasPrefix(line, "Threads:"):
			threads, _ = strconv.Atoi(strings.TrimSpace(line[len("Threads:"):]))
		}
	}
	if !mine {
		return 0
	}
	return max(threads, 1)
}
