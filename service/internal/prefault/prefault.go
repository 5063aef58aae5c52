// Package prefault maps a buffer's pages in one system call before the
// buffer is filled, instead of one page fault per page as bytes arrive.
//
// Where a page fault traps to a hypervisor it is dear: on the project's
// machines (Firecracker guests) filling fresh memory costs 12.4 µs a page
// faulted in, 5.7 µs a page mapped in bulk first (BenchmarkFill, quiet
// machine). A 3.7 MB upload is about 900 pages; under 500 clients the
// kernel's copies into source buffers were 78 % of thumbd's page faults
// (docs/hardening.md, "Page faults").
package prefault

// minBytes is the smallest buffer worth a system call: below it the
// faults cost less than the call.
const minBytes = 64 << 10
