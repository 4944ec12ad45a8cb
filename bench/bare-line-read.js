// The floor of `wh serve dead-letters list`: a bare streaming read of the same file, a chunk at a
// time, counting its lines (node bench/bare-line-read.js FILE). Prints the count.
import { createReadStream } from "node:fs";

let lines = 0;
for await (const chunk of createReadStream(process.argv[2])) for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines += 1;
console.log(lines);
