#!/usr/bin/env -S node --import tsx
// Runs the TypeScript sources directly (no build); for development only.
import { execute } from '@oclif/core'

await execute({ development: true, dir: import.meta.url })
