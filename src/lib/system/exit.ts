/**
 * A finished command must not outlive its result. A TCP connect to a host that drops SYNs stays
 * pending in the kernel for about two minutes after our own timeout gave up, and grpc-js offers
 * no way to abort it, so the process would linger with its answer already printed. A clean run
 * exits on its own before the grace passes (the timer is unref'd and holds nothing open).
 */
export const EXIT_GRACE_MS = 500

/** Exits with process.exitCode once the grace has passed, unless the process ended before. */
export function exitAfterGrace(ms = EXIT_GRACE_MS): void {
  setTimeout(() => process.exit(), ms).unref()
}
