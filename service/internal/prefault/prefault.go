// Package prefault maps a buffer's pages in one system call before the
// buffer is filled, instead of one page fault per page as bytes arrive.
//
// Where a page fault traps to a hypervisor it is dear: on the project's
// machines (Firecracker guests) a fault costs about 25 µs and a page
// populated in bulk about 1 µs (BenchmarkFill). An upload of 3.7 MB read
// into fresh memory took about 900 faults, 22 ms of CPU; under 500 clients
// the kernel's copies into source buffers were 78 % of thumbd's page
// faults (docs/hardening.md, "Page faults").
package prefault

// minBytes is the smallest buffer worth a system call: below it the
// faults cost less than the call.
const minBytes = 64 << 10
