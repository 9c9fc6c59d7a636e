/**
 * A TCP port that never completes a handshake: a listener whose accept queue is full and never
 * drained, so Linux drops further SYNs, as a firewalled or vanished host does. The client's
 * connect() then waits for the kernel's SYN retries (about two minutes), which no timer in our
 * code can cut short. Node always accepts, so this is a small python3 process (cloud-init's
 * dependency, installed by scripts/setup.sh).
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'

const LISTENER = `
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
fill = []
for _ in range(4):  # more than the queue holds: the queue is full for everyone after
    c = socket.socket(); c.setblocking(False)
    try: c.connect(s.getsockname())
    except BlockingIOError: pass
    fill.append(c)
print(s.getsockname()[1], flush=True)
sys.stdin.read()  # until the test closes stdin
`

export interface SynDropPeer {
  port: number
  stop(): Promise<void>
}

export async function startSynDropPeer(): Promise<SynDropPeer> {
  const child = spawn('python3', ['-c', LISTENER], { stdio: ['pipe', 'pipe', 'inherit'] })
  const [line] = (await once(child.stdout, 'data')) as [Buffer]
  const port = Number(line.toString().trim())
  if (!Number.isInteger(port) || port <= 0) throw new Error(`syn-drop peer printed ${line.toString()}`)
  return {
    port,
    stop: async () => {
      if (child.exitCode !== null) return
      const exited = once(child, 'exit')
      child.stdin.end()
      await exited
    },
  }
}
