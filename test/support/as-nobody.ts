/** Another local user of the host: a child process as `nobody` (uid/gid 65534); needs root. */
import { execFile } from 'node:child_process'

export const NOBODY_ID = 65534

// Prints "connected" or the errno code; a TCP address is HOST:PORT, a unix socket unix:/path.
const PROBE = `
const net = require('node:net')
const a = process.argv[1]
const at = a.lastIndexOf(':')
const target = a.startsWith('unix:') ? { path: a.slice(5) } : { host: a.slice(0, at), port: Number(a.slice(at + 1)) }
const s = net.connect(target, () => { process.stdout.write('connected'); s.destroy() })
s.on('error', (e) => process.stdout.write(e.code || e.message))
`

/** What `nobody` gets when it connects to `address`: "connected", or the error code (EACCES…). */
export function connectAsNobody(address: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['-e', PROBE, address],
      { uid: NOBODY_ID, gid: NOBODY_ID, cwd: '/', env: { PATH: '/usr/bin:/bin' }, timeout: 10_000 },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    ),
  )
}
