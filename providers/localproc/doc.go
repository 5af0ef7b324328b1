// Package localproc is the exact-process provider on this machine
// (capability exactProcess; spec J; checklist EXP-01..EXP-13). It runs
// real processes and holds no agents: its agent Create refuses with
// contract.ErrUnsupported, and its document declares nothing but
// exactProcess.
//
// # What it owns
//
// A state root (Options.Dir, mode 0700). Each environment is a fresh
// directory Dir/envs/<id> (mode 0700) holding env.json (the create input
// with its idempotency key and digest, and the lifetime), root/ (the
// environment's file system) and procs/<pid>/ per process (start.json,
// stdout, stderr and, once it ended, term.json). Every record is
// canonical JSON written atomically and decoded strictly.
//
// # What an image is
//
// An image is a local directory tree registered in Options.Images and
// addressed immutably as "local@sha256:<hex>" (ImageRef): the SHA-256 of
// a manifest of every entry's path, type, POSIX mode and content digest
// (or link target). Any other reference — a tag, a registry image, the
// host's root — is refused with contract.ErrUnsupported. Create copies
// the tree into root/, hashing what it copies, and refuses the copy
// unless it has the requested digest, so an environment always starts
// from exactly the named bytes; an empty /tmp (mode 1777) is added when
// the image has none. Files are owned by the sandbox user.
//
// # What it enforces
//
//   - Fresh environment: a new root per create; no process runs until
//     Spawn; nothing listens for ingress.
//   - Confinement: processes run chrooted into root/ as the sandbox user
//     (Options.SandboxUID/GID, default 65534, never root) with no
//     supplementary groups, in fresh user, network, pid, IPC and UTS
//     namespaces. The user namespace maps only the sandbox ids (to
//     themselves) and is owned by the provider, so the process holds no
//     capability while the provider may still set its limits. File
//     operations resolve inside root/ (os.Root): ".." stays at the root,
//     and symbolic links that leave it are refused with ErrPath (an
//     absolute link target counts as leaving it).
//   - Egress blocked: the fresh network namespace has no interface but a
//     down loopback, so every protocol to every address fails. Only mode
//     blocked is declared; strict is refused (contract.ErrUnsupported),
//     since a domain allowlist is not enforced here.
//   - Shell-free argv and a replacement environment: the executable is
//     exec'd directly with [executable, args...] and exactly launch.Env.
//   - Explicit resources, as per-process rlimits set while the process is
//     held at exec (ptrace), before it runs an instruction: RLIMIT_DATA =
//     memoryMb (writable private memory; RLIMIT_AS would refuse runtimes
//     that reserve address space, such as Go's), RLIMIT_FSIZE = diskMb,
//     RLIMIT_CPU = cpu × maxLifetimeMs (a CPU-time budget), RLIMIT_CORE =
//     0; the image and each WriteFile must also fit in diskMb. They bound
//     each process, not the sum of a tree, nor total disk use or CPU
//     share: cgroup v2 would, but this provider does not use cgroups (the
//     machine it was built on has cgroup v1 only), and it sets no
//     RLIMIT_NPROC, which counts per user across environments.
//   - Process trees: each process is pid 1 of its own pid namespace and
//     leader of its own process group; killing it (Kill, timeout, a
//     cancelled Spawn, Destroy) kills every descendant, including ones
//     that left the group. A timeout ends as termination timeout, a kill
//     as signal SIGKILL, never as an exit.
//   - Bounded exact reads: the size is checked before any byte is read,
//     and at most maxBytes+1 bytes are read.
//   - Idempotent create: the key and input digest live in env.json, so a
//     new Provider over Dir replays or refuses a key exactly as the one
//     that created it; concurrent same-key creates in one instance are
//     one effect (contract.KeyedExactProcessCreate).
//   - Lifetime: an environment is destroyed when maxLifetimeMs ends,
//     also when the expiry is noticed by a later instance.
//
// # Recovery
//
// A process's stdout and stderr are files it writes itself, so its
// output survives the provider. The instance that started a process
// reaps it and records its termination in term.json (first writer wins).
// A new Provider over the same Dir recovers environments and processes
// from their records; a recovered process replays its output files and
// reports the recorded termination. A recovered process without a
// record is followed through its host pid and start time: while it runs
// it can be killed and its timeout is enforced; if it ended while no
// instance was there to reap it, its exit status is unknowable, and it
// is recorded as cancelled (or as the kill or timeout this instance
// caused) — never as an invented exit code.
//
// # What it does not do
//
// It needs root and namespace support: New probes the real launch path
// (a process in the fresh namespaces as the sandbox user, held at exec,
// limited, then killed before it runs), and when that fails the provider
// declares and offers no exactProcess (ExactProcessUnavailable says why).
// It creates no agent environments, so providertest's agent scenarios
// skip for it; its exact-process-lifecycle family runs in full. It does not limit CPU share or
// total memory of a tree, does not enforce egress allowlists, and does
// not make root/ read-only. Values of environment variables never
// appear in its errors.
package localproc
