/**
 * A state disk and a kubeadm for the tests that init and join re-key the disk while kubeadm runs:
 * the re-key waits until kubeadm has started (so a flow that runs them one after the other never
 * finishes), and kubeadm outlasts the re-key, as on a real node, unless its signal stops it.
 */
import type { StateDisk } from '../../src/lib/bootstrapper/init/init-node.js'

export function rekeyBesideKubeadm<T>(rekey: 'succeeds' | 'fails', kubeadmResult: T) {
  const seen = { kubeadmStopped: false, kubeadmFinished: false, marked: false }
  let kubeadmStarted = () => {}
  const started = new Promise<void>((resolve) => (kubeadmStarted = resolve))
  const disk: StateDisk = {
    uuid: () => Promise.resolve('0a1b2c3d-0000-0000-0000-000000000000'),
    changeKey: () =>
      started.then(() => {
        if (rekey === 'fails') throw new Error('cryptsetup exited 2')
      }),
    writeMark: () => Promise.resolve(void (seen.marked = true)),
  }
  const kubeadm = (_input: unknown, signal: AbortSignal): Promise<T> => {
    kubeadmStarted()
    return new Promise<T>((resolve, reject) => {
      const done = setTimeout(() => {
        seen.kubeadmFinished = true
        resolve(kubeadmResult)
      }, 50)
      signal.addEventListener('abort', () => {
        clearTimeout(done)
        seen.kubeadmStopped = true
        reject(new Error('kubeadm: signal SIGTERM'))
      })
    })
  }
  return { seen, disk, kubeadm }
}
