; NEXUS query for Ruby. Capture names are shared by every language: see extract.py's docstring.
; Ruby modules are reported as kind "namespace" (the file's own symbol is the "module"); `def` at file
; level is a function, inside a class or module a method; `def self.x` and the methods of `class << self`
; are methods of the enclosing class. `class A::B` names its owner itself (the hook's `owner`).
; Only `call` nodes are calls: a bare identifier may be a local variable, so `foo` alone is never one.
; `X.new(...)` is a constructor call of X; require / require_relative become imports in the hook.

(class name: (constant) @name) @definition.class @bases
(class name: (scope_resolution name: (_) @name)) @definition.class @bases
(module name: (constant) @name) @definition.namespace @bases
(module name: (scope_resolution name: (_) @name)) @definition.namespace @bases
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method

; foo(...), foo arg
(call
  !receiver
  method: (identifier) @call.name) @reference.call

; obj.m, self.m, Foo.m, A::B.m — but not X.new, which is a constructor call below
(call
  receiver: (_) @call.receiver
  method: [(identifier) (constant)] @call.name
  (#not-eq? @call.name "new")) @reference.call

; Foo.new(...), A::B.new(...)
(call
  receiver: (constant) @call.name
  method: (identifier) @_new
  (#eq? @_new "new")) @reference.new

(call
  receiver: (scope_resolution) @call.name @call.receiver
  method: (identifier) @_new
  (#eq? @_new "new")) @reference.new

; super(...) and a bare `super` anywhere: the same-named method of an ancestor
((super) @call.name @call.receiver @reference.call)

; Point = Struct.new(:x, :y) do ... end / Klass = Class.new(Base) do ... end: a class with its block's defs
(assignment
  left: (constant) @name
  right: (call
    receiver: (constant) @_maker
    method: (identifier) @_new
    block: (do_block))
  (#match? @_maker "^(Struct|Class)$")
  (#eq? @_new "new")) @definition.class @bases
