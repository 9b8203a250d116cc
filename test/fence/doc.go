// Package fence holds the import fences of garra's roles: tests that fail
// when a package a role must not link enters that role's import closure.
// docs/architecture.md says what each room may import and why; these tests
// are what holds it to that.
package fence
