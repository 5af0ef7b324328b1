// Command helper is the test image's one program: the localproc tests
// copy it into an image directory as /bin/helper and /bin/true.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

func main() {
	if filepath.Base(os.Args[0]) == "true" {
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: helper MODE ...")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "greet":
		fmt.Print("hello ")
		fmt.Fprint(os.Stderr, "note: localproc\n")
		fmt.Print("world\n")
	case "env":
		env := os.Environ()
		slices.Sort(env)
		for _, kv := range env {
			fmt.Println(kv)
		}
	case "argv":
		for _, a := range args {
			fmt.Println(a)
		}
	case "cat":
		io.Copy(os.Stdout, os.Stdin)
	case "exit":
		n, _ := strconv.Atoi(args[0])
		os.Exit(n)
	case "sleep":
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
	case "fork":
		// A grandchild in its own session (escaping the process group),
		// then both sleep.
		c := exec.Command(os.Args[0], "sleep", args[0], "grandchild")
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		c.SysProcAttr = setsid()
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("forked")
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
	case "connect":
		conn, err := net.DialTimeout("tcp", args[0], 2*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		conn.Close()
		fmt.Println("connected")
	case "alloc":
		n, _ := strconv.Atoi(args[0])
		b := make([]byte, n<<20)
		for i := range b {
			b[i] = byte(i)
		}
		fmt.Println("allocated", len(b)>>20)
	case "pwd":
		wd, err := os.Getwd()
		fmt.Println(wd, err)
	case "id":
		fmt.Println(os.Getuid(), os.Getgid())
	case "write":
		n, _ := strconv.Atoi(args[1])
		if err := os.WriteFile(args[0], make([]byte, n), 0o644); err != nil {
			fmt.Println("write:", err)
			os.Exit(3)
		}
	case "ls":
		entries, err := os.ReadDir(args[0])
		if err != nil {
			fmt.Println("ls:", err)
			os.Exit(3)
		}
		for _, e := range entries {
			fmt.Println(e.Name())
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}
