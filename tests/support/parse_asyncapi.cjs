// Parse an AsyncAPI document with the official parser; print its diagnostics as one JSON object.
const { Parser } = require("@asyncapi/parser");
const fs = require("node:fs");

(async () => {
  const { document, diagnostics } = await new Parser().parse(fs.readFileSync(process.argv[2], "utf8"));
  const shown = diagnostics.map((d) => ({ severity: d.severity, code: d.code, message: d.message, path: d.path }));
  process.stdout.write(JSON.stringify({ parsed: document !== undefined, diagnostics: shown }));
})();
