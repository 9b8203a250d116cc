package readmeblocks

import (
	"strings"
	"testing"
)

func TestProblems(t *testing.T) {
	readme := "# A\n\n<!-- test: sh -->\n```sh\necho ok\n```\n\n" +
		"## B\n\n```sh\necho unmarked\n```\n\n" +
		"<!-- test: nosuch -->\n```sh\necho x\n```\n\n" +
		"<!-- test: output -->\n```sh\necho hidden as output\n```\n\n" +
		"<!-- test: skip -->\n```sh\necho no reason\n```\n\n" +
		"<!-- test: garraserver spec -->\n```yaml\nspec: {}\n```\n"
	blocks := Parse(readme)
	if len(blocks) != 6 || blocks[0].Runner != "sh" || blocks[1].Heading != "B" || blocks[5].Argument != "spec" || blocks[0].Body != "echo ok\n" {
		t.Fatalf("parsed %+v", blocks)
	}
	got := strings.Join(Problems(blocks), "\n")
	for _, want := range []string{
		"README.md:10: a ```sh block under \"B\" has no <!-- test: RUNNER --> marker",
		"no runner \"nosuch\"",
		"runner output does not take a ```sh block",
		"runner skip needs an argument",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if n := len(Problems(blocks)); n != 4 {
		t.Errorf("%d problems, want 4:\n%s", n, got)
	}
}
