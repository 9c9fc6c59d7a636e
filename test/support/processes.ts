/** Processes on this machine whose command line mentions `text` (a test's temp path): leak checks. */
import { readdir, readFile } from 'node:fs/promises'

export async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    // a process may exit between the listing and the read
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.replaceAll('\0', ' ').includes(text)) pids.push(Number(entry))
  }
  return pids
}
