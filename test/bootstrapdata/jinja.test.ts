/**
 * cloud-init renders a `## template: jinja` document before it parses the YAML. Whatever the user
 * wrote (file bodies, Secret values, commands, kubeadm values) must reach the node literally;
 * only instance-data references such as `{{ ds.meta_data.local_hostname }}` are filled.
 * Checked with the real cloud-init's renderer.
 */
import { readFile } from 'node:fs/promises'
import { parse } from 'yaml'
import { expect } from '../support/chai.js'
import { renderCloudConfig } from '../../src/lib/bootstrapdata/cloud-init.js'
import { generateBootstrapData } from '../../src/lib/bootstrapdata/index.js'
import {
  emptyPlan,
  fixtureText,
  renderedByCloudInit,
  tempWorkspace,
  testDeps,
  testOptions,
  validateCloudConfig,
} from './helpers.js'

const PAYLOADS: Record<string, string> = {
  'an expression': '{{ 7*7 }}',
  'an include': "{% include '/etc/passwd' %}",
  'Python reached through Jinja': '{{ cycler.__init__.__globals__.os.getuid() }}',
  'a filter on instance data': '{{ ds.meta_data.local_hostname | upper }}',
  'a comment, raw blocks, delimiters in every spot and a CR (Jinja turns raw CRs into LFs)':
    "a{# c #}b {%raw%}{{x}}{% endraw %} {{'{'}} }} %} #} {\r\n{",
}

interface WriteFile {
  path: string
  content: string
  encoding?: string
}

/** The bytes cloud-init's write_files writes for an entry. */
function writtenBytes(file: WriteFile): string {
  const base64 = file.encoding === 'b64' || file.encoding === 'base64'
  return base64 ? Buffer.from(file.content, 'base64').toString('utf8') : file.content
}

function parseCloudConfig(text: string): { write_files: WriteFile[]; runcmd: string[]; users?: unknown[] } {
  expect(text.startsWith('#cloud-config\n'), text.slice(0, 200)).to.equal(true)
  return parse(text) as { write_files: WriteFile[]; runcmd: string[] }
}

describe('bootstrap data under cloud-init Jinja (real cloud-init render)', () => {
  for (const [name, payload] of Object.entries(PAYLOADS)) {
    it(`${name} in a file, a command, a user and a kubeadm value comes out literally`, async () => {
      const content = `${payload}\n`
      const doc = renderCloudConfig({
        ...emptyPlan,
        files: [{ path: '/etc/user-file', content }],
        preCommands: [`echo ${payload}`, 'hostnamectl set-hostname {{ ds.meta_data.local_hostname }}'],
        users: [{ name: 'u', gecos: payload }],
        kubeadm: {
          phase: 'init',
          config: `nodeRegistration:\n  name: "{{ ds.meta_data.local_hostname }}"\n  note: ${JSON.stringify(payload)}\n`,
        },
      })
      const rendered = await renderedByCloudInit(doc)
      const got = parseCloudConfig(rendered)
      expect(writtenBytes(got.write_files[0] as WriteFile)).to.equal(content)
      expect(got.runcmd.slice(0, 2)).to.deep.equal([`echo ${payload}`, 'hostnamectl set-hostname node-1'])
      expect(got.users).to.deep.equal([{ name: 'u', gecos: payload }])
      const kubeadm = parse(writtenBytes(got.write_files[1] as WriteFile)) as {
        nodeRegistration: Record<string, string>
      }
      expect(kubeadm.nodeRegistration).to.deep.equal({ name: 'node-1', note: payload })
      expect(rendered).not.to.match(/\b49\b|root:x:0:0|NODE-1/)
      await validateCloudConfig(doc)
    })
  }

  it('an instance-data reference is filled in commands and kubeadm values, never in a file body', async () => {
    const ref = '{{ ds.meta_data.local_hostname }}'
    const doc = renderCloudConfig({
      ...emptyPlan,
      files: [{ path: '/etc/user-file', content: `${ref}\n` }],
      preCommands: [`echo ${ref}`],
      kubeadm: { phase: 'join', config: `nodeRegistration:\n  name: "${ref}"\n` },
    })
    const got = parseCloudConfig(await renderedByCloudInit(doc))
    expect(writtenBytes(got.write_files[0] as WriteFile)).to.equal(`${ref}\n`)
    expect(writtenBytes(got.write_files[1] as WriteFile)).to.equal('nodeRegistration:\n  name: "node-1"\n')
    expect(got.runcmd[0]).to.equal('echo node-1')
  })

  it('a contentFrom Secret with Jinja in it is written byte for byte', async () => {
    const secret = "{{ 7*7 }} {% include '/etc/passwd' %}\n"
    const input = (await fixtureText()).replace(
      'token: not-a-real-registry-token',
      `token: ${JSON.stringify(secret)}`,
    )
    const ws = await tempWorkspace()
    try {
      const result = await generateBootstrapData(
        testOptions(ws.dir, { machine: 'cp-0' }),
        await testDeps(input),
      )
      const doc = await readFile(result.machines[0]?.file as string, 'utf8')
      const got = parseCloudConfig(await renderedByCloudInit(doc))
      const file = got.write_files.find((f) => f.path === '/etc/demo/registry-token')
      expect(writtenBytes(file as WriteFile)).to.equal(secret)
    } finally {
      await ws.cleanup()
    }
  })

  it('a document that refers to no instance data is no template at all', () => {
    const doc = renderCloudConfig({ ...emptyPlan, preCommands: ["awk '{print $1}' /etc/hosts"] })
    expect(doc).to.equal("#cloud-config\nruncmd:\n  - awk '{print $1}' /etc/hosts\n")
  })
})
