package procguard_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/procguard"
)

// starterEnv makes this test binary the "supervisor" of
// TestGroupDiesWithItsStarter: it starts a guarded group whose leader
// runs a grandchild, prints the grandchild's pid, and waits to be killed.
const starterEnv = "PROCGUARD_TEST_STARTER"

func TestMain(m *testing.M) {
	if os.Getenv(starterEnv) != "" {
		os.Exit(starter())
	}
	os.Exit(m.Run())
}

func starter() int {
	cmd, grandchild, err := guardedGroup()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	if _, err := procguard.Group(cmd.Process.Pid); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	os.Stdout.WriteString(strconv.Itoa(grandchild) + "\n")
	time.Sleep(time.Minute) // the test kills this process
	return 0
}

// guardedGroup starts a shell as the leader of its own group (Attr) that
// starts a sleeping grandchild in that group and reports its pid.
func guardedGroup() (*exec.Cmd, int, error) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & echo $!; wait")
	cmd.SysProcAttr = procguard.Attr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return cmd, pid, err
}

// gone polls until pid no longer runs (gone, or a zombie nobody reaped
// yet) or a deadline passes.
func gone(pid int, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return true
			}
		}
	}
	return false
}

// Release ends the group's work: what the leader started in the group
// (a grandchild the leader's own end would leave running) is killed too.
func TestReleaseKillsTheGroup(t *testing.T) {
	cmd, grandchild, err := guardedGroup()
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	release, err := procguard.Group(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	release()
	cmd.Wait()
	if !gone(grandchild, 10*time.Second) {
		t.Errorf("the group's grandchild %d still runs after release", grandchild)
	}
}

// A process that started a guarded group and is then SIGKILLed — no
// deferred cleanup runs — leaves nothing of that group running: the
// guard sees its pipe close and kills the group, grandchild included.
func TestGroupDiesWithItsStarter(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	starter := exec.Command(os.Args[0], "-test.run=^$")
	starter.Env = append(os.Environ(), starterEnv+"=1")
	out, err := starter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	defer starter.Process.Kill()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	var grandchild int
	select {
	case line := <-lines:
		if grandchild, err = strconv.Atoi(line); err != nil {
			t.Fatalf("the starter reported %q, not a pid", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("the starter never reported its group's grandchild")
	}
	defer syscall.Kill(grandchild, syscall.SIGKILL)
	if gone(grandchild, 200*time.Millisecond) {
		t.Fatal("the grandchild ended before its starter was killed")
	}
	if err := starter.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	starter.Wait()
	if !gone(grandchild, 10*time.Second) {
		t.Errorf("the grandchild %d of a SIGKILLed starter's group still runs", grandchild)
	}
}
