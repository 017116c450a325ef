// Starts the vendored s3rver (third_party/s3rver) on 127.0.0.1, an ephemeral port, storing
// under DIR, with BUCKET made; prints "port N" on stdout once it serves. Ends on SIGTERM.
//   node tests/support/s3_server.js DIR BUCKET
'use strict';
const path = require('path');
const S3rver = require(path.join(__dirname, '..', '..', 'third_party', 's3rver', 'node_modules', 's3rver'));
const [dir, bucket] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory: dir,
  silent: true,
  configureBuckets: [{ name: bucket }],
});
server.run().then(
  (address) => process.stdout.write(`port ${address.port}\n`),
  (err) => {
    process.stderr.write(`s3rver: ${err}\n`);
    process.exit(1);
  },
);
process.on('SIGTERM', () => process.exit(0));
