package dnspub

// System call numbers (include/uapi/asm-generic/unistd.h).
const (
	sysRECVMMSG = 243
	sysSENDMMSG = 269
)
