/** What of a gRPC error an operator reads: the peer's words, not the transport's bookkeeping. */

/**
 * `rpc error: code = INTERNAL desc = running kubeadm…` → `running kubeadm…`; grpc-js' `14 UNAVAILABLE: x`
 * → `x`; `No connection established. Last error: Error: connect ECONNREFUSED … Resolution note: ` →
 * `connect ECONNREFUSED …`.
 */
export function withoutRpcInternals(message: string): string {
  return message
    .replace(/^rpc error: code = [A-Z_]+ desc = /, '')
    .replace(/^\d+ [A-Z_]+: /, '')
    .replace(/^No connection established\. Last error: (?:Error: )?/, '')
    .replace(/\.? ?Resolution note: ?.*$/s, '')
    .replace(/error:[0-9A-F]+:SSL routines:[^:]*:/g, '')
}
