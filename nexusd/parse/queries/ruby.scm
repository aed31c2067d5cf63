; NEXUS query for Ruby. Capture names are shared by every language: see extract.py's docstring.
; Ruby modules are reported as kind "namespace" (the file's own symbol is the "module"); `def` at file
; level is a function, inside a class or module a method; `def self.x` and the methods of `class << self`
; are methods of the enclosing class. `class A::B` names its owner itself (the hook's `owner`).
; A call node is its own name capture (the hook reads its method). A bare identifier (`total`, `main`) is
; matched where an expression is read: the hook's `call_name` keeps it as a call on self unless it is a
; local variable at that point (Ruby's parse-time rule, `BareNames` in lang_ruby.py), else NOT_A_CALL.
; Positions that bind or name (parameters, assignment targets, `def` / `alias` names) are not matched.
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
  method: (identifier)) @reference.call @call.name

; obj.m, self.m, Foo.m, A::B.m — but not X.new, which is a constructor call below
(call
  receiver: (_) @call.receiver
  method: [(identifier) (constant)] @_method
  (#not-eq? @_method "new")) @reference.call @call.name

; a bare foo where a value is read (the reference node is the identifier itself)
[
  (program (identifier) @call.name @reference.call)
  (body_statement (identifier) @call.name @reference.call)
  (block_body (identifier) @call.name @reference.call)
  (begin (identifier) @call.name @reference.call)
  (then (identifier) @call.name @reference.call)
  (else (identifier) @call.name @reference.call)
  (do (identifier) @call.name @reference.call)
  (ensure (identifier) @call.name @reference.call)
  (parenthesized_statements (identifier) @call.name @reference.call)
  (begin_block (identifier) @call.name @reference.call)
  (end_block (identifier) @call.name @reference.call)
  (method body: (identifier) @call.name @reference.call)
  (singleton_method body: (identifier) @call.name @reference.call)
  (call receiver: (identifier) @call.name @reference.call)
  (argument_list (identifier) @call.name @reference.call)
  (splat_argument (identifier) @call.name @reference.call)
  (hash_splat_argument (identifier) @call.name @reference.call)
  (block_argument (identifier) @call.name @reference.call)
  (assignment right: (identifier) @call.name @reference.call)
  (operator_assignment right: (identifier) @call.name @reference.call)
  (right_assignment_list (identifier) @call.name @reference.call)
  (optional_parameter value: (identifier) @call.name @reference.call)
  (keyword_parameter value: (identifier) @call.name @reference.call)
  (binary (identifier) @call.name @reference.call)
  (unary operand: (identifier) @call.name @reference.call)
  (range (identifier) @call.name @reference.call)
  (element_reference (identifier) @call.name @reference.call)
  (scope_resolution scope: (identifier) @call.name @reference.call)
  (interpolation (identifier) @call.name @reference.call)
  (array (identifier) @call.name @reference.call)
  (pair key: (identifier) @call.name @reference.call)
  (pair value: (identifier) @call.name @reference.call)
  (conditional (identifier) @call.name @reference.call)
  (if condition: (identifier) @call.name @reference.call)
  (unless condition: (identifier) @call.name @reference.call)
  (elsif condition: (identifier) @call.name @reference.call)
  (while condition: (identifier) @call.name @reference.call)
  (until condition: (identifier) @call.name @reference.call)
  (if_modifier (identifier) @call.name @reference.call)
  (unless_modifier (identifier) @call.name @reference.call)
  (while_modifier (identifier) @call.name @reference.call)
  (until_modifier (identifier) @call.name @reference.call)
  (rescue_modifier (identifier) @call.name @reference.call)
  (if_guard condition: (identifier) @call.name @reference.call)
  (unless_guard condition: (identifier) @call.name @reference.call)
  (case value: (identifier) @call.name @reference.call)
  (case_match value: (identifier) @call.name @reference.call)
  (pattern (identifier) @call.name @reference.call)
  (match_pattern value: (identifier) @call.name @reference.call)
  (test_pattern value: (identifier) @call.name @reference.call)
  (expression_reference_pattern value: (identifier) @call.name @reference.call)
  (in (identifier) @call.name @reference.call)
  (exceptions (identifier) @call.name @reference.call)
  (superclass (identifier) @call.name @reference.call)
  (singleton_class value: (identifier) @call.name @reference.call)
  (singleton_method object: (identifier) @call.name @reference.call)
]

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
