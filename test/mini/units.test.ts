/** Unit files as a mini node's supervisor reads them: the project's own, and what it refuses. */
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { simulatorPaths } from '../../src/lib/simulator/index.js'
import { parseUnitFile, timeSpan } from '../../src/lib/mini/units.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'

const fail = (why: string): never => {
  throw new Error(why)
}

describe('mini: unit files (the supervisor reads systemd units)', () => {
  it('reads every unit the project ships, the simulator kubelet and mini’s own, with systemd’s meaning', async () => {
    const files = [
      ...(await readdir(path.join(REPO_ROOT, 'templates/systemd'))).map((f) =>
        path.join(REPO_ROOT, 'templates/systemd', f),
      ),
      ...(await readdir(path.join(REPO_ROOT, 'templates/mini'))).map((f) =>
        path.join(REPO_ROOT, 'templates/mini', f),
      ),
      simulatorPaths(REPO_ROOT).kubeletUnit,
    ]
    const units = Object.fromEntries(
      await Promise.all(
        files.map(
          async (f) =>
            [path.basename(f), parseUnitFile(path.basename(f), await readFile(f, 'utf8'), f)] as const,
        ),
      ),
    )
    expect(units['constellation-state-disk.service']).to.deep.include({
      type: 'oneshot',
      remainAfterExit: true,
      startTimeoutMs: undefined, // TimeoutStartSec=infinity: it waits for a key as long as it takes
      startsAtBoot: true,
      umask: '0077',
    })
    expect(units['constellation-bootstrapper.service']).to.deep.include({
      type: 'simple',
      restart: 'no',
      remainAfterExit: true,
      requires: ['constellation-state-disk.service'],
      stopTimeoutMs: 15_000,
      startsAtBoot: true,
    })
    expect(units['constellation-bootstrapper.service']?.after).to.include('constellation-state-disk.service')
    expect(units['constellation-joinservice.service']).to.deep.include({
      restart: 'on-failure',
      restartMs: 2_000,
    })
    expect(units['constellation-joinservice.service']?.wants).to.include('constellation-keyservice.service')
    expect(units['constellation-verifyservice.service']).to.deep.include({
      restart: 'on-failure',
      startsAtBoot: true,
    })
    expect(units['kubelet.service']).to.deep.include({
      startsAtBoot: false, // kubeadm starts it (the simulator's kubeadm, through systemctl)
      execStart: [
        '/usr/bin/kubelet',
        '--kubeconfig=/etc/kubernetes/kubelet.conf',
        '--root-dir=/var/lib/kubelet',
      ],
      restart: 'always',
      restartMs: 10_000,
    })
  })

  const refused: Record<string, [string, RegExp]> = {
    'an unknown key': [
      '[Service]\nExecStart=/bin/true\nMemoryMax=1G\n',
      /x.service:3: "MemoryMax=1G": mini's systemd does not implement this in \[Service\]/,
    ],
    'an unknown section': [
      '[Timer]\nOnBoot=1s\n',
      /x.service:1: "\[Timer\]": mini's systemd implements no \[Timer\] section/,
    ],
    'a key outside any section': ['ExecStart=/bin/true\n', /x.service:1: .*does not implement this$/],
    'an unterminated quote in ExecStart': [
      '[Service]\nExecStart=/bin/sh -c "true\n',
      /x.service:2: .*an unterminated " quote/,
    ],
    'the @ prefix': ['[Service]\nExecStart=@/bin/true true\n', /x.service:2: .*the @ prefix/],
    'a specifier it does not resolve': [
      '[Service]\nExecStart=/bin/echo %H\n',
      /x.service:2: .*the specifier %H is not one mini's systemd resolves/,
    ],
    'a restart policy it does not know': [
      '[Service]\nExecStart=/bin/true\nRestart=on-abnormal\n',
      /one of no, on-failure, always/,
    ],
    'a failure action': [
      '[Unit]\nFailureAction=reboot\n[Service]\nExecStart=/bin/true\n',
      /only FailureAction=none/,
    ],
    'output elsewhere than the journal': [
      '[Service]\nExecStart=/bin/true\nStandardOutput=null\n',
      /only "journal"/,
    ],
    'no ExecStart': ['[Service]\nType=simple\n', /x.service: the unit has no ExecStart=/],
  }
  for (const [name, [text, want]] of Object.entries(refused))
    it(`refuses ${name}, naming file and line`, () => {
      expect(() => parseUnitFile('x.service', text)).to.throw(want)
    })

  it('reads ExecStart= as systemd does: prefixes, quotes and escapes, specifiers, ${VAR} and $VAR', () => {
    const unit = parseUnitFile(
      'web.service',
      [
        '[Service]',
        'ExecStart=-/bin/sh -c \'echo "$$HOME" %n\' "a b" x\\ y ${GREETING}! $ARGS %N %% ${UNSET}',
        'Environment=GREETING=hi ARGS=--one=1',
      ].join('\n'),
    )
    expect(unit.ignoreFailure).to.equal(true)
    // quoted words keep $VAR as text; expansion applies to ${VAR} there too
    expect(unit.execStart).to.deep.equal([
      '/bin/sh',
      '-c',
      'echo "$HOME" web.service',
      'a b',
      'x y',
      'hi!',
      '--one=1',
      'web',
      '%',
      '',
    ])
    const verbatim = parseUnitFile('v.service', '[Service]\nExecStart=:/bin/echo ${X} $X\nEnvironment=X=1\n')
    expect(verbatim.execStart).to.deep.equal(['/bin/echo', '${X}', '$X'])
    expect(verbatim.ignoreFailure).to.equal(false)
  })

  it('reads systemd time spans, and infinity', () => {
    expect(
      ['2s', '500ms', '1min 30s', '1min30s', '90', '1.5s', '2h'].map((v) => timeSpan(v, fail)),
    ).to.deep.equal([2_000, 500, 90_000, 90_000, 90_000, 1_500, 7_200_000])
    expect(timeSpan('infinity', fail)).to.equal(undefined)
    expect(() => timeSpan('soon', fail)).to.throw(/a time span like 2s/)
  })
})
