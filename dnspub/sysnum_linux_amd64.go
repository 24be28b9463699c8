package dnspub

// System call numbers (arch/x86/entry/syscalls/syscall_64.tbl); package
// syscall is frozen and lacks SYS_SENDMMSG on amd64.
const (
	sysRECVMMSG = 299
	sysSENDMMSG = 307
)
