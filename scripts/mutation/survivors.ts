/** Lists the survivors of the last run of a domain: `tsx scripts/mutation/survivors.ts kms`. */
import { readFileSync } from 'node:fs'

interface Mutant {
  mutatorName: string
  replacement?: string
  status: string
  location: { start: { line: number; column: number } }
}
const report = JSON.parse(
  readFileSync(`reports/mutation/${process.argv[2] ?? ''}/mutation.json`, 'utf8'),
) as { files: Record<string, { mutants: Mutant[] }> }
for (const [file, { mutants }] of Object.entries(report.files))
  for (const m of mutants)
    if (m.status === 'Survived' || m.status === 'NoCoverage')
      console.log(
        `${file}:${m.location.start.line}:${m.location.start.column} ${m.status} ${m.mutatorName}: ${(m.replacement ?? '').replace(/\s+/g, ' ').slice(0, 110)}`,
      )
