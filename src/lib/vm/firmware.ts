/**
 * What the firmware of a node VM measures into PCRs 0–9 before the kernel runs: SeaBIOS (Debian's
 * seabios 1.16 in QEMU 7.2's `pc` machine, direct kernel boot, tpm-tis, one vCPU, 1 GiB), read from a
 * booted node with `tpm2_pcrread` and identical on every node and every image build (the kernel,
 * initrd and command line, passed by fw_cfg, are not measured: no measuring boot loader). They are
 * the reference values `mini up --machines vm` puts into the config, as Constellation publishes
 * measurements per image; test/e2e/mini-vm checks a booted node against them, so a QEMU or
 * SeaBIOS update that moves them fails there, by PCR.
 */
const SEPARATOR_ONLY = 'e21b703ee69c77476bccb43ec0336a9a1b2914b378944f7b00a10214ca8fea93'
const ZERO = '0'.repeat(64)

export const VM_FIRMWARE_PCRS: ReadonlyMap<number, string> = new Map([
  [0, SEPARATOR_ONLY],
  [1, '4d461c03d8baf80779a1680e794961b91361d77ee82a863ddefd057de7d09ea1'],
  [2, 'eafc36777287f6d88290432bfb6f6cdc85a42afbc2441e3c679a718058d56d58'],
  [3, SEPARATOR_ONLY],
  [4, '1eb9aa21337cc1fa31ce5f56900d7bf59b9dda366823095aed06544caa2557ca'],
  [5, SEPARATOR_ONLY],
  [6, SEPARATOR_ONLY],
  [7, SEPARATOR_ONLY],
  [8, ZERO],
  [9, ZERO],
])
