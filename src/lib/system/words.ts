/** "1 node", "3 nodes": a count with its noun (a regular plural). */
export const counted = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`
