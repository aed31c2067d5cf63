// Ground truth for a TypeScript project from the TypeScript compiler API: definitions, call edges, imports.
//
//     node ts_truth.js TYPESCRIPT_DIR ROOT OUT.json
//
// TYPESCRIPT_DIR is the folder of the `typescript` package installed by the bench (a bench-only dependency).
// Nothing here reads NEXUS. The rules (what a definition is, who the caller is, how a callee is chosen) are
// written in README.md beside this file.
"use strict";

const fs = require("fs");
const path = require("path");

const [tsDir, rootArg, outPath] = process.argv.slice(2);
const ts = require(tsDir);
const root = fs.realpathSync(rootArg);
const SKIP = new Set(["node_modules", ".git", "dist", "build", "coverage"]);
const t0 = Date.now();

function walk(dir, out) {
  for (const ent of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (ent.name.startsWith(".") || SKIP.has(ent.name)) continue;
    const full = path.join(dir, ent.name);
    if (ent.isDirectory()) walk(full, out);
    else if (/\.(ts|tsx|mts|cts)$/.test(ent.name) && !/\.d\.[mc]?ts$/.test(ent.name)) out.push(full);
  }
  return out;
}

const files = walk(root, []);
const options = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  jsx: ts.JsxEmit.Preserve,
  experimentalDecorators: true,
  allowJs: false,
  noEmit: true,
  skipLibCheck: true,
  strict: false,
  types: [],
  allowImportingTsExtensions: true,
  resolveJsonModule: false,
};
// The project's own module mapping: `paths` and `baseUrl` of tsconfig.json at the root (the bench restores it
// there from corpus.json when the package leaves it out). Nothing else of it is taken.
const configPath = path.join(root, "tsconfig.json");
if (fs.existsSync(configPath)) {
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"));
  const parsed = ts.parseJsonConfigFileContent({ compilerOptions: (read.config || {}).compilerOptions || {} }, ts.sys, root);
  for (const k of ["baseUrl", "paths", "pathsBasePath"]) if (parsed.options[k] !== undefined) options[k] = parsed.options[k];
}
const host = ts.createCompilerHost(options, true);
const program = ts.createProgram(files, options, host);
const checker = program.getTypeChecker();
const rel = (f) => path.relative(root, f).split(path.sep).join("/");
const inRepo = (f) => {
  const r = path.relative(root, f);
  return !r.startsWith("..") && !path.isAbsolute(r) && !r.split(path.sep).includes("node_modules") && !/\.d\.[mc]?ts$/.test(f);
};

const isFn = (n) => n && (ts.isArrowFunction(n) || ts.isFunctionExpression(n));
const isClassLike = (n) => n && (ts.isClassDeclaration(n) || ts.isClassExpression(n));

// A named definition: returns [name node, kind] or null.
function definition(node) {
  if (ts.isFunctionDeclaration(node) && node.name) return [node.name, "function"];
  if (ts.isClassDeclaration(node) && node.name) return [node.name, "class"];
  if (ts.isClassExpression(node) && node.name) return [node.name, "class"];
  if (ts.isMethodDeclaration(node) && node.body) {
    return [node.name, ts.isObjectLiteralExpression(node.parent) ? "object-member" : "method"];
  }
  if ((ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node)) && node.body) {
    return [node.name, ts.isObjectLiteralExpression(node.parent) ? "object-member" : "method"];
  }
  if (ts.isConstructorDeclaration(node) && node.body) return [node, "constructor"];
  if (ts.isPropertyDeclaration(node) && isFn(node.initializer)) return [node.name, "method"];
  if (ts.isPropertyAssignment(node) && isFn(node.initializer)) return [node.name, "object-member"];
  if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
    if (isFn(node.initializer)) return [node.name, "function"];
    if (isClassLike(node.initializer)) return [node.name, "class"];
    // a top-level const/let/var whose initialiser calls something
    const stmt = node.parent && node.parent.parent;
    if (stmt && ts.isVariableStatement(stmt) && ts.isSourceFile(stmt.parent) && containsCall(node.initializer)) {
      return [node.name, "variable"];
    }
  }
  if (ts.isModuleDeclaration(node) && ts.isIdentifier(node.name) && node.body) return [node.name, "namespace"];
  return null;
}

function containsCall(expr) {
  let found = false;
  const visit = (n) => {
    if (found) return;
    if (ts.isCallExpression(n) || ts.isNewExpression(n) || ts.isTaggedTemplateExpression(n)) {
      found = true;
      return;
    }
    ts.forEachChild(n, visit);
  };
  visit(expr);
  return found;
}

function nameText(nameNode, sf) {
  if (ts.isConstructorDeclaration(nameNode)) return "constructor";
  if (ts.isIdentifier(nameNode) || ts.isPrivateIdentifier(nameNode)) return nameNode.text;
  if (ts.isStringLiteral(nameNode) || ts.isNumericLiteral(nameNode)) return nameNode.text;
  return nameNode.getText(sf);
}

function lineOf(sf, pos) {
  return sf.getLineAndCharacterOfPosition(pos).line + 1;
}

const defs = {}; // rel -> [{name, kind, line, col, end}]
const defOfNode = new Map(); // declaration node -> {file, line, name}
const calls = [];
const imports = [];
const counts = { total: 0, unresolved: 0, outside_repository: 0, in_repository: 0 };

function registerDef(node, sf) {
  const d = definition(node);
  if (!d) return null;
  const [nameNode, kind] = d;
  const at = nameNode.getStart(sf);
  const lc = sf.getLineAndCharacterOfPosition(at);
  const outer = ts.isVariableDeclaration(node) && ts.isVariableStatement(node.parent.parent) ? node.parent.parent : node;
  const start = lineOf(sf, outer.getStart(sf));
  const entry = { name: nameText(nameNode, sf), kind, line: lc.line + 1, start, col: lc.character, end: lineOf(sf, node.end) };
  const r = rel(sf.fileName);
  (defs[r] = defs[r] || []).push(entry);
  const key = { file: r, line: entry.line, name: entry.name };
  defOfNode.set(node, key);
  return key;
}

// The callee declaration(s) a symbol stands for, as definitions of the repository.
function calleeDefs(sym) {
  if (!sym) return null;
  if (sym.flags & ts.SymbolFlags.Alias) {
    try {
      sym = checker.getAliasedSymbol(sym);
    } catch (e) {
      return null;
    }
  }
  const decls = sym.declarations || [];
  if (!decls.length) return null;
  const out = [];
  let external = false;
  // overloads: the declaration with a body stands for every signature
  const withBody = decls.filter((d) => (ts.isFunctionDeclaration(d) || ts.isMethodDeclaration(d) || ts.isConstructorDeclaration(d)) && d.body);
  const chosen = [];
  for (const d of decls) {
    if ((ts.isFunctionDeclaration(d) || ts.isMethodDeclaration(d)) && !d.body && withBody.length) continue;
    chosen.push(d);
  }
  for (let d of chosen) {
    const sf = d.getSourceFile();
    if (!inRepo(sf.fileName)) {
      external = true;
      continue;
    }
    if (ts.isConstructorDeclaration(d)) d = d.parent; // a constructor stands for its class
    const key = defOfNode.get(d);
    if (key) out.push(key);
  }
  if (!out.length) return external ? "external" : null;
  return out;
}

function calleeName(expr) {
  // the name token of a callee expression, or null when the callee has none (f()(), (a || b)())
  while (ts.isParenthesizedExpression(expr) || ts.isNonNullExpression(expr)) expr = expr.expression;
  if (ts.isIdentifier(expr)) return expr;
  if (ts.isPropertyAccessExpression(expr)) return expr.name;
  if (ts.isElementAccessExpression(expr) && ts.isStringLiteralLike(expr.argumentExpression)) return expr.argumentExpression;
  if (expr.kind === ts.SyntaxKind.SuperKeyword) return expr;
  return null;
}

function symbolOf(nameNode) {
  if (nameNode.kind === ts.SyntaxKind.SuperKeyword) {
    const t = checker.getTypeAtLocation(nameNode);
    return t && t.symbol;
  }
  let sym = checker.getSymbolAtLocation(nameNode);
  if (sym && ts.isShorthandPropertyAssignment(nameNode.parent)) sym = checker.getShorthandAssignmentValueSymbol(nameNode.parent);
  return sym;
}

// `super(...)` runs a base constructor: the declaration of the signature the compiler resolves for the call
// (an overload signature gives way to the constructor with a body); null when no constructor is declared
// along the chain (then the base class stands for it, as for any call of a class).
function superTarget(nameNode) {
  const call = nameNode.parent;
  if (nameNode.kind !== ts.SyntaxKind.SuperKeyword || !call || !ts.isCallExpression(call) || call.expression !== nameNode) return null;
  const sig = checker.getResolvedSignature(call);
  let decl = sig && sig.declaration;
  if (!decl || !ts.isConstructorDeclaration(decl)) return null;
  if (!decl.body) decl = decl.parent.members.find((m) => ts.isConstructorDeclaration(m) && m.body) || decl;
  if (!inRepo(decl.getSourceFile().fileName)) return "external";
  const key = defOfNode.get(decl);
  return key ? [key] : null;
}

// Interface dispatch, kept apart from the call edges (README.md, "Interface dispatch"): a call the checker binds
// to a method signature of a project interface reaches, at run time, the method of that name of each project
// class implementing the interface (named in its `implements`, or its base classes', or extended by an interface
// so named); the method is the one the class's instance type has (its own or inherited), with a body.
const implementedBy = new Map(); // interface symbol -> [class symbol]
function aliased(sym) {
  if (sym && sym.flags & ts.SymbolFlags.Alias) {
    try {
      return checker.getAliasedSymbol(sym);
    } catch (e) {
      return null;
    }
  }
  return sym;
}
function interfaceClosure(sym, out) {
  if (!sym || out.has(sym) || !(sym.flags & ts.SymbolFlags.Interface)) return;
  out.add(sym);
  for (const d of sym.declarations || []) {
    if (!ts.isInterfaceDeclaration(d)) continue;
    for (const h of d.heritageClauses || []) for (const t of h.types) interfaceClosure(aliased(checker.getSymbolAtLocation(t.expression)), out);
  }
}
function implementedInterfaces(classSym, seen) {
  const out = new Set();
  if (!classSym || seen.has(classSym)) return out;
  seen.add(classSym);
  for (const d of classSym.declarations || []) {
    if (!isClassLike(d)) continue;
    for (const h of d.heritageClauses || []) {
      for (const t of h.types) {
        const sym = aliased(checker.getSymbolAtLocation(t.expression));
        if (h.token === ts.SyntaxKind.ImplementsKeyword) interfaceClosure(sym, out);
        else if (sym && sym.flags & ts.SymbolFlags.Class) for (const i of implementedInterfaces(sym, seen)) out.add(i);
      }
    }
  }
  return out;
}
function collectImplementors(sf) {
  const visit = (node) => {
    if (isClassLike(node) && node.name) {
      const classSym = checker.getSymbolAtLocation(node.name);
      for (const i of implementedInterfaces(classSym, new Set())) {
        if (!implementedBy.has(i)) implementedBy.set(i, []);
        implementedBy.get(i).push(classSym);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
function dispatchTargets(sym) {
  sym = aliased(sym);
  if (!sym) return [];
  const out = [];
  for (const d of sym.declarations || []) {
    if (!ts.isMethodSignature(d) || !ts.isInterfaceDeclaration(d.parent) || !inRepo(d.getSourceFile().fileName)) continue;
    const iface = aliased(checker.getSymbolAtLocation(d.parent.name));
    const name = sym.escapedName;
    for (const classSym of implementedBy.get(iface) || []) {
      const prop = checker.getDeclaredTypeOfSymbol(classSym).getProperty(name);
      for (const pd of (prop && prop.declarations) || []) {
        const key = inRepo(pd.getSourceFile().fileName) ? defOfNode.get(pd) : null;
        if (key) out.push(key);
      }
    }
  }
  return out;
}
const dispatch = [];

// Decorators, parameter defaults of a class member and class heritage run where the class is defined: their
// calls are credited to the scope enclosing the decorated definition.
function scan(sf) {
  const r = rel(sf.fileName);
  const stack = [];
  function site(nameNode, node) {
    counts.total++;
    const caller = stack.length ? stack[stack.length - 1] : { file: r, line: 0, name: "<module>" };
    const targets = superTarget(nameNode) || calleeDefs(symbolOf(nameNode));
    if (targets === null) {
      const line = lineOf(sf, nameNode.getStart(sf));
      const seenTargets = new Set();
      for (const t of nameNode.kind === ts.SyntaxKind.SuperKeyword ? [] : dispatchTargets(symbolOf(nameNode))) {
        const k = `${t.file}:${t.line}:${t.name}`;
        if (seenTargets.has(k)) continue;
        seenTargets.add(k);
        dispatch.push({ file: r, caller: [caller.file, caller.line, caller.name], line, name: nameText(nameNode, sf), callee: [t.file, t.line, t.name] });
      }
      counts.unresolved++;
      return;
    }
    if (targets === "external") {
      counts.outside_repository++;
      return;
    }
    counts.in_repository++;
    const line = lineOf(sf, nameNode.getStart(sf));
    const seen = new Set();
    for (const t of targets) {
      const k = `${t.file}:${t.line}:${t.name}`;
      if (seen.has(k)) continue;
      seen.add(k);
      calls.push({ file: r, caller: [caller.file, caller.line, caller.name], line, name: nameNode.kind === ts.SyntaxKind.SuperKeyword ? "super" : nameText(nameNode, sf), callee: [t.file, t.line, t.name] });
    }
  }
  function visit(node) {
    if (ts.isDecorator(node)) {
      // handled by the decorated definition (see below)
      return;
    }
    const key = defOfNode.get(node) || null;
    const decorators = ts.canHaveDecorators && ts.canHaveDecorators(node) ? ts.getDecorators(node) || [] : [];
    for (const dec of decorators) {
      const e = dec.expression;
      if (!ts.isCallExpression(e)) {
        const n = calleeName(e);
        if (n) site(n, dec);
      }
      ts.forEachChild(dec, visit);
    }
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const n = calleeName(node.expression);
      if (n) site(n, node);
    } else if (ts.isTaggedTemplateExpression(node)) {
      const n = calleeName(node.tag);
      if (n) site(n, node);
    }
    if (key) stack.push(key);
    ts.forEachChild(node, (child) => {
      if (ts.isDecorator(child)) return;
      visit(child);
    });
    if (key) stack.pop();
  }
  visit(sf);
}

function scanImports(sf) {
  const r = rel(sf.fileName);
  const add = (specNode, node) => {
    if (!specNode || !ts.isStringLiteralLike(specNode)) return;
    const res = ts.resolveModuleName(specNode.text, sf.fileName, options, host);
    const f = res.resolvedModule && res.resolvedModule.resolvedFileName;
    if (f && inRepo(f)) {
      const dst = rel(fs.realpathSync(f));
      if (dst !== r) imports.push({ file: r, line: lineOf(sf, node.getStart(sf)), dst, specifier: specNode.text });
    }
  };
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) add(st.moduleSpecifier, st);
    else if (ts.isExportDeclaration(st) && st.moduleSpecifier) add(st.moduleSpecifier, st);
    else if (ts.isImportEqualsDeclaration(st) && ts.isExternalModuleReference(st.moduleReference)) add(st.moduleReference.expression, st);
  }
}

const sources = program.getSourceFiles().filter((sf) => inRepo(sf.fileName));
// Definitions first (every file), so a call can land on a definition in a file scanned later.
for (const sf of sources) {
  const visit = (node) => {
    registerDef(node, sf);
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
for (const sf of sources) collectImplementors(sf);
for (const sf of sources) {
  scan(sf);
  scanImports(sf);
}
const sortedDefs = {};
for (const k of Object.keys(defs).sort()) sortedDefs[k] = defs[k];
for (const sf of sources) if (!sortedDefs[rel(sf.fileName)]) sortedDefs[rel(sf.fileName)] = [];
const result = {
  tool: { name: "typescript", version: ts.version },
  files: sources.map((sf) => rel(sf.fileName)).sort(),
  definitions: sortedDefs,
  calls,
  dispatch,
  imports,
  sites: counts,
  seconds: Math.round((Date.now() - t0) / 100) / 10,
};
fs.writeFileSync(outPath, JSON.stringify(result));
