package shellgate

// argv0 gates a command started under another name (exec -a NAME, env
// --argv0 NAME): multi-call programs such as busybox pick what they do
// from that name, and bash invoked as sh or rbash changes behaviour, so the
// command is judged under both names.
func (c *checker) argv0(name string, cl callCtx) string {
	if len(cl.args) == 0 {
		return ""
	}
	as := append([]arg{litArg(name)}, cl.args[1:]...)
	return c.gateCall(cl.with(as))
}
