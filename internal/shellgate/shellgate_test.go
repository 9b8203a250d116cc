package shellgate

import (
	"strings"
	"testing"
	"time"
)

// blocked lists commands that must never run, grouped by the rule they
// exercise. want, when set, must appear in the reason.
var blocked = []struct {
	cmd  string
	want string
}{
	// Destructive rm in every spelling, and its dangerous targets.
	{"rm -rf /", "dangerous target"},
	{"rm -rf /*", "root"},
	{"rm -fr /", ""},
	{"rm -r -f /", ""},
	{"rm --recursive --force /", ""},
	{"rm -Rf /", ""},
	{"rm -rf ~", "home"},
	{"rm -rf ~/", "home"},
	{"rm -rf ~/*", "home"},
	{"rm -rf $HOME", "unquoted expansion"},
	{`rm -rf "$HOME"`, "non-literal"},
	{"rm -rf ..", "parent"},
	{"rm -rf ../..", ""},
	{"rm -rf *", "wildcard"},
	{"rm -rf .*", ""},
	{"rm -rf .", "working directory"},
	{"rm -rf ./", ""},
	{"rm -rf /etc", "system"},
	{"rm -rf /usr/lib/python3", ""},
	{"rm --no-preserve-root -rf /", "no-preserve-root"},
	{"rm --no-pres -r /", "no-preserve-root"},
	{"rm --recur --force /home/user", ""},
	{"rm -rf -- /", ""},
	{"rm -r /var/log", ""},
	{"rm -f /etc/passwd", "system"},
	{"rm *", "wildcard"},
	{`rm -rf "$dir"`, ""},
	{"rm $opts build", "unquoted expansion"},
	{`rm "$opt" /home/user/project`, ""},
	{"sudo rm -rf /", ""},
	{"rm -rf //", ""},
	{"rm -rf /./", ""},
	{"rm -rf '/'", ""},
	{`rm -rf "/"`, ""},
	{`r\m -rf /`, ""},
	{"rm -rf /{etc,usr}", ""},
	{"rm -rf ~+", ""},
	{"rm -rf .git", ".git"},
	{"rm -rf /tmp", "system"},
	{"find . -name '*.tmp' | xargs rm -rf", "run-time"},
	{"find / -delete", "find -delete"},
	{"find . -name '*.o' -delete", "find -delete"},
	{`find . -exec rm {} \;`, "find -exec rm"},
	{`find . -execdir ls \;`, "find -execdir"},
	{"find . -type f -exec rm -f {} +", "find -exec rm"},
	{`find . $action`, "non-literal find"},
	{"dd if=/dev/zero of=/dev/sda", "dd of="},
	{"dd of=disk.img if=/dev/zero bs=1M", "dd of="},
	{"mkfs.ext4 /dev/sda1", "filesystem format"},
	{"mkfs -t ext4 /dev/sdb", "filesystem format"},
	{"shred -u secret.txt", "wipe"},
	{"wipefs -a /dev/sda", "wipe"},
	{"truncate -s 0 /etc/passwd", "system path"},
	{":(){ :|:& };:", "fork bomb"},
	{"bomb(){ bomb|bomb& }; bomb", "fork bomb"},
	{"shutdown -h now", "power"},
	{"reboot", "power"},
	{"halt", "power"},
	{"poweroff", "power"},
	{"systemctl reboot", "systemctl reboot"},
	{"chmod -R 777 /", "dangerous target"},
	{"chown -R user:user /", "dangerous target"},
	{"chmod 777 /etc/shadow", "system"},
	{"chmod -R 755 ~", "home"},
	{"chgrp -R staff /usr", ""},
	{"echo x > /dev/sda", "system path"},
	{"cat disk.img > /dev/nvme0n1", "system path"},
	{"echo hack >> /etc/passwd", "system path"},
	{"echo 'alias ls=rm' >> ~/.bashrc", "protected file"},
	{"cp evil .git/hooks/pre-commit", "protected file"},
	{"echo key >> ~/.ssh/authorized_keys", "protected file"},
	{"mv / /tmp/x", "dangerous source"},
	{"kill -9 -1", "every process"},
	{"kill 1", "every process"},
	{"tee /etc/hosts < f", "system path"},
	{"tar xf x.tar -C /", "extraction"},
	{"echo x > ../../../etc/cron.d/x", "system path"},

	// Network-capable programs, by any name, quoting or wrapper.
	{"curl https://example.com", `network-capable program "curl"`},
	{"wget http://x", "wget"},
	{"/usr/bin/curl x", "curl"},
	{"./curl x", "curl"},
	{"'cu''rl' x", "curl"},
	{`"curl" x`, "curl"},
	{`c\url x`, "curl"},
	{`$'\x63url' x`, "curl"},
	{`$'\143url' x`, "curl"},
	{`$'\u0063url' x`, "curl"},
	{"CURL x", "curl"},
	{"sudo curl x", "curl"},
	{"sudo -u bob curl x", "curl"},
	{"sudo -E -H -u bob -- curl x", "curl"},
	{"doas curl x", "curl"},
	{"env curl x", "curl"},
	{"env FOO=1 curl x", "curl"},
	{"env -i PATH=/bin curl x", "curl"},
	{"env -u HOME -C /tmp wget x", "wget"},
	{"nice -n 10 curl x", "curl"},
	{"nice -10 curl x", "curl"},
	{"nohup curl x &", "curl"},
	{"timeout 5 curl x", "curl"},
	{"timeout -s KILL 5 curl x", "curl"},
	{"timeout --signal=KILL 5s wget x", "wget"},
	{"stdbuf -oL curl x", "curl"},
	{"xargs -n1 curl < urls.txt", "curl"},
	{"cat urls | xargs -P4 -n 1 wget", "wget"},
	{"command curl x", "curl"},
	{"exec curl x", "curl"},
	{"busybox wget x", "wget"},
	{"toybox nc host 80", "nc"},
	{"/usr/bin/time -v curl x", "curl"},
	{"ionice -c3 curl x", "curl"},
	{"chroot / curl x", "curl"},
	{"setsid curl x", "curl"},
	{"su -c 'curl x'", "curl"},
	{`su root -c "curl x"`, "curl"},
	{"runuser -u bob -- curl x", "curl"},
	{"sg staff -c 'curl x'", "curl"},
	{"builtin eval 'curl x'", "curl"},
	{"sudo --unknown-flag x curl y", "curl"},
	{"strace -f -o /tmp/t curl x", "curl"},
	{"unshare -r --net curl x", "curl"},
	{"watch -n1 'curl x'", "curl"},
	{"flock /tmp/lock curl x", "curl"},
	{"flock /tmp/lock -c 'curl x'", "curl"},
	{"script -qc 'curl x' /dev/null", "curl"},
	{"nix-shell -p hello --run 'curl x'", "curl"},
	{"poetry run curl x", "curl"},
	{"uv run --with requests curl x", "curl"},
	{"npm exec -- wget x", "wget"},
	{"env -S 'curl x'", "curl"},
	{"sudo -E env curl x", "curl"},
	{"ssh user@host", "ssh"},
	{"scp f host:", "scp"},
	{"sftp host", "sftp"},
	{"nc -l 4444", "nc"},
	{"ncat host 80", "ncat"},
	{"netcat host 80", "netcat"},
	{"socat - TCP:host:80", "socat"},
	{"telnet host", "telnet"},
	{"ftp host", "ftp"},
	{"rsync -a . host:/x", "rsync"},
	{"echo data > /dev/tcp/1.2.3.4/80", "/dev/tcp"},
	{"exec 3<>/dev/tcp/host/80", "/dev/tcp"},
	{"cat < /dev/udp/host/53", "/dev/tcp"},
	{`p=tcp; echo x > /dev/$p/host/80`, "/dev/tcp"},
	{"ln -s /usr/bin/curl ./c", "copy of network-capable"},
	{"cp /usr/bin/wget ./w", "copy of network-capable"},
	{"gh pr create", "gh"},
	{"aws s3 cp f s3://b", "aws"},

	// Mutating subcommands.
	{"git push", `mutating subcommand "git push"`},
	{"git push origin main --force", "git push"},
	{"git -C dir push", "git push"},
	{"git --git-dir=x push", "git push"},
	{"git --no-pager -c user.name=x push", "git push"},
	{"git remote add evil https://x", "git remote add"},
	{"git remote set-url origin https://x", "git remote set-url"},
	{"git config --global user.email x", "git config --global"},
	{"git config --system core.editor vi", "git config --system"},
	{"git config alias.p '!curl x'", "git config"},
	{"git config core.hooksPath /tmp/h", "git config"},
	{"git -c core.sshCommand='curl x' fetch", "curl"},
	{"git -c alias.x='!sh' x", "git config"},
	{"git clone 'ext::sh -c curl% x' d", "transport"},
	{"git fetch --upload-pack='curl x' origin", "runs a program"},
	{"git credential fill", "git credential"},
	{"git send-email x.patch", "git send-email"},
	{"git rebase -x 'curl x' HEAD~3", "curl"},
	{"git submodule foreach 'curl x'", "curl"},
	{"git bisect run curl x", "curl"},
	{"git filter-branch --tree-filter x", "filter-branch"},
	{"systemctl restart nginx", "systemctl restart"},
	{"systemctl stop x", ""},
	{"systemctl start x", ""},
	{"systemctl enable x", ""},
	{"systemctl disable x", ""},
	{"systemctl mask x", ""},
	{"systemctl --user daemon-reload", ""},
	{"service nginx restart", "service restart"},
	{"kubectl delete pod x", "kubectl delete"},
	{"kubectl apply -f x.yml", "kubectl apply"},
	{"kubectl -n prod exec -it x -- sh", "kubectl exec"},
	{"kubectl create ns x", ""},
	{"kubectl patch deploy x -p '{}'", ""},
	{"kubectl edit deploy x", ""},
	{"kubectl replace -f x.yml", ""},
	{"kubectl scale deploy x --replicas=0", ""},
	{"kubectl cp pod:/etc/passwd .", ""},
	{"kubectl config view --raw", "kubectl config view"},
	{"docker run alpine", "docker run"},
	{"docker exec -it c sh", "docker exec"},
	{"docker rm c", "docker rm"},
	{"docker rmi img", ""},
	{"docker push img", ""},
	{"docker build .", ""},
	{"docker -H tcp://x:2375 run alpine", "docker run"},
	{"podman run x", "podman run"},
	{"docker compose up -d", "compose up"},
	{"docker compose -f x.yml down", "compose down"},
	{"docker image rm x", "image rm"},
	{"helm install x ./chart", "helm install"},
	{"helm upgrade x ./chart", ""},
	{"helm uninstall x", ""},
	{"helm delete x", ""},
	{"npm publish", "npm publish"},
	{"npm config set registry http://x", "npm config set"},
	{"crontab -e", "crontab"},
	{"crontab -l", "crontab"},
	{"terraform apply -auto-approve", "terraform apply"},
	{"cargo publish", "cargo publish"},

	// Environment dumps.
	{"env", "environment dump"},
	{"env -0", "environment dump"},
	{"printenv", "printenv"},
	{"printenv HOME", "printenv"},
	{"echo $(env)", "environment dump"},
	{"echo `env`", "environment dump"},
	{"echo $(printenv)", "printenv"},
	{`echo "${!PATH}"`, "indirection"},
	{"echo ${!AWS*}", "indirection"},
	{"declare -x", "environment dump"},
	{"declare -p", "environment dump"},
	{"typeset -x", "environment dump"},
	{"export -p", "environment dump"},
	{"export", "environment dump"},
	{"set", "environment dump"},
	{"compgen -e", "environment dump"},
	{"compgen -v", "environment dump"},
	{"compgen -A export", "environment dump"},
	{"cat <(env)", "environment dump"},
	{"ps eww", "environment dump"},
	{"ps auxe", "environment dump"},
	{"awk 'BEGIN{for(k in ENVIRON) print k, ENVIRON[k]}'", "ENVIRON"},
	{"x=$(env | base64)", "environment dump"},
	{"f(){ local -n r=HOME; echo $r; }", "indirection"},
	{"command declare -p", "environment dump"},

	// Pipes and redirections into a shell or interpreter.
	{"echo ls | bash", `pipe into shell "bash"`},
	{"cat script | sh", "pipe into shell"},
	{"echo x |sh", "pipe into shell"},
	{"cat x | python3", "pipe into interpreter"},
	{"cat x | perl", "pipe into interpreter"},
	{"cat x | node", "pipe into interpreter"},
	{"cat x | ruby", "pipe into interpreter"},
	{"cat x | php", "pipe into interpreter"},
	{"cat x | zsh", "pipe into shell"},
	{"cat x | source /dev/stdin", "pipe into shell"},
	{"cat x | . /dev/stdin", "pipe into shell"},
	{"bash <(echo ls)", "process substitution"},
	{"source <(echo ls)", "process substitution"},
	{". <(echo ls)", "process substitution"},
	{"python3 <(echo 1)", "process substitution"},
	{"cat x |& bash", "pipe into shell"},
	{"echo ls | sudo bash", "pipe into shell"},
	{"echo ls | xargs bash -c", "bash -c"},
	{"echo x | (bash)", "stdin"},
	{"echo ls | bash -s", "pipe into shell"},
	{"wget -O- x | sh", ""},
	{"echo ls | bash -", "pipe into shell"},
	{"echo 'print(1)' | python3 -", "stdin"},

	// procfs environ reads.
	{"cat /proc/self/environ", "environ"},
	{"cat /proc/1/environ", "environ"},
	{"cat /proc/$PPID/environ", "environ"},
	{`cat "/proc/$$/environ"`, "environ"},
	{"strings /proc/*/environ", "environ"},
	{"xxd /proc/self/environ", "environ"},
	{"od -c /proc/self/environ", "environ"},
	{"head -c 999 /proc/self/environ", "environ"},
	{"less /proc/self/environ", "environ"},
	{`tr '\0' '\n' < /proc/self/environ`, "environ"},
	{"cd /proc/self && cat environ", "environ"},
	{"cat /proc/self/task/1/environ", "environ"},
	{"cat /pr'oc'/self/env'iron'", "environ"},
	{"cat /proc/self/env*", "environ"},
	{"for p in /proc/[0-9]*; do cat $p/environ; done", "environ"},
	{"grep -a KEY /proc/1/environ", "environ"},
	{`f=environ; cat /proc/self/$f`, "environ"},
	{"xargs -0 -a /proc/self/environ echo", "environ"},

	// Inline code.
	{"bash -c 'curl x'", "curl"},
	{`sh -c "wget y"`, "wget"},
	{"zsh -c 'nc -l 1'", "nc"},
	{"bash -lc 'curl x'", "curl"},
	{`bash -c "$(echo curl)"`, "non-literal"},
	{`bash -c "$CMD"`, "non-literal"},
	{"eval 'curl x'", "curl"},
	{`eval "$x"`, "non-literal"},
	{"eval $(echo ls)", "non-literal"},
	{"python -c 'import os'", "inline python"},
	{"python3 -c 'print(1)'", "inline python"},
	{"python3.12 -c 'x'", "inline python"},
	{"python3 -Bc 'x'", "inline python"},
	{"perl -e 'print 1'", "inline perl"},
	{"perl -E 'say 1'", "inline perl"},
	{"perl -lne 'print' f", "inline perl"},
	{"perl -pi -e 's/a/b/' f", "inline perl"},
	{"perl -MIO::Socket -e 1", "inline perl"},
	{"node -e '1'", "inline node"},
	{"node --eval '1'", "inline node"},
	{"node -p '1'", "inline node"},
	{"nodejs -e 1", "inline node"},
	{"ruby -e 'puts 1'", "inline ruby"},
	{"ruby -run -e httpd", "inline ruby"},
	{"php -r 'echo 1;'", "inline php"},
	{"php -S 0.0.0.0:80", "php"},
	{"lua -e 'print(1)'", "inline lua"},
	{"Rscript -e 'system(\"x\")'", "inline R"},
	{"osascript -e 'x'", "AppleScript"},
	{`awk 'BEGIN{system("curl x")}'`, "system()"},
	{`awk '{print | "sh"}'`, "print | cmd"},
	{`awk 'BEGIN{"date" | getline d}'`, "getline"},
	{`awk "$prog" f`, "non-literal awk"},
	{"sed 's/x/y/e' f", "sed s///e"},
	{"sed '1e curl x' f", "sed e command"},
	{"sed -n -e '/a/e id' f", "sed e command"},
	{`sed "$script" f`, "non-literal sed"},
	{"bash <<'EOF'\ncurl x\nEOF", "curl"},
	{"bash <<EOF\ncurl x\nEOF", "curl"},
	{"bash <<EOF\necho $HOME\nEOF", "non-literal here-document"},
	{`sh <<< "curl x"`, "curl"},
	{"python3 <<EOF\nimport os\nEOF", "here-document"},
	{"python3 - <<EOF\nimport os\nEOF", "stdin"},
	{`bash -c 'bash -c "curl x"'`, "curl"},
	{`sh -c 'eval "curl x"'`, "curl"},
	{`find . -exec sh -c 'curl x' \;`, "curl"},
	{"xargs sh -c 'curl x'", "curl"},
	{"trap 'curl x' EXIT", "curl"},
	{"alias x='curl y'", "curl"},
	{"python3 -m http.server", "http.server"},
	{"python3 -m timeit 'x'", "timeit"},
	{"vim -c '!curl x' f", "editor"},
	{"vi +'!curl x' f", "editor"},
	{"tar --to-command='curl x' -xf a.tar", "curl"},
	{"tar -cf x.tar --checkpoint-action=exec=id .", "tar option"},
	{"bash -c 'echo ok; curl x'", "curl"},
	{"make --eval='x:'", "make --eval"},
	{"sqlite3 db '.shell curl x'", "sqlite3"},
	{"ed f <<< '!curl x'", "ed"},
	{"mapfile -C 'curl x' -c 1 < f", "curl"},

	// Command names that are not literal words.
	{"$CMD", "non-literal command name"},
	{"${CMD} x", "non-literal command name"},
	{"$(echo curl) x", "non-literal command name"},
	{"`echo curl` x", "non-literal command name"},
	{`"$x" y`, "non-literal command name"},
	{"c?rl x", "non-literal command name"},
	{"cur* x", "non-literal command name"},
	{"{curl,x}", "non-literal command name"},
	{"cu{r,}l x", "non-literal command name"},
	{`c{u,"u"}rl x`, "non-literal command name"},
	{"$0", "non-literal command name"},
	{"sudo $CMD", "non-literal command name"},
	{"timeout 5 $CMD", "non-literal command name"},

	// Nesting: subshells, blocks, substitutions, control flow, functions.
	{"(curl x)", "curl"},
	{"{ curl x; }", "curl"},
	{"echo $(curl x)", "curl"},
	{`echo "$(curl x)"`, "curl"},
	{"diff <(curl a) b", "curl"},
	{"tee >(curl -d @- x) < f", "curl"},
	{"if true; then curl x; fi", "curl"},
	{"if curl x; then :; fi", "curl"},
	{"while true; do curl x; done", "curl"},
	{"until curl x; do :; done", "curl"},
	{"for i in 1; do wget x; done", "wget"},
	{"for i in $(curl x); do :; done", "curl"},
	{"case x in x) curl y;; esac", "curl"},
	{"f(){ curl x; }; f", "curl"},
	{"function f { wget x; }", "wget"},
	{"true && curl x", "curl"},
	{"false || curl x", "curl"},
	{"ls; curl x", "curl"},
	{"ls\ncurl x", "curl"},
	{"curl x &", "curl"},
	{"coproc curl x", "curl"},
	{"coproc NAME { curl x; }", "curl"},
	{"time curl x", "curl"},
	{"time -p curl x", "curl"},
	{"! curl x", "curl"},
	{"[[ $(curl x) ]]", "curl"},
	{"x=$(curl y)", "curl"},
	{"echo $(( $(curl x) ))", "curl"},
	{"cat <<EOF\n$(curl x)\nEOF", "curl"},
	{"select x in a; do curl y; done", "curl"},
	{"declare a=$(curl x)", "curl"},
	{"local a=`wget x`", "wget"},
	{"echo ${x:-$(curl y)}", "curl"},
	{"a=(1 $(curl x))", "curl"},
	{"let 'a[$(id)]=1'", "arithmetic"},

	// Variables that carry code.
	{"GIT_SSH_COMMAND='curl x' git fetch", "curl"},
	{"LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD"},
	{"BASH_ENV=/tmp/x bash script.sh", "BASH_ENV"},
	{"export BASH_ENV=/tmp/x", "BASH_ENV"},
	{"PROMPT_COMMAND='curl x'", "curl"},
	{"PS4='$(curl x)'", "command substitution"},
	{"x='$(curl y)'", "command substitution"},
	{"env LD_PRELOAD=/x.so ls", "LD_PRELOAD"},
	{"PAGER='sh -c \"curl x\"' git log", "curl"},

	// Parse errors are blocks.
	{"echo 'unterminated", "unparsable"},
	{"if then fi", "unparsable"},
	{"ls (", "unparsable"},
	{"echo $((", "unparsable"},
	{`echo "x`, "unparsable"},

	// Interactive shells and other escapes.
	{"sudo -s", "root shell"},
	{"sudo -i", "root shell"},
	{"sudo -e /etc/hosts", "sudo -e"},
	{"su", "interactive shell"},
	{"su - root", "interactive shell"},
	{"bash", "stdin"},
	{"sh -s", "stdin"},
	{"python3", "stdin"},
	{"hash -p /usr/bin/curl ls", "hash -p"},
	{"enable -f /tmp/x.so x", "enable -f"},
	{"gdb -p 1", "debugger"},
	{"at now", "scheduled"},
	{"ip link set eth0 down", "network configuration"},
	{"sysctl -w x=1", "sysctl"},
	{"iptables -F", "firewall"},
	{"mount /dev/sda1 /mnt", "mount"},
	{"useradd x", "account"},
	{"strace -p 1", "attaching"},
	{"tmux new -d 'curl x'", "detached"},

	// Less common ways for a builtin or tool to run a string as code.
	{"npx -c 'curl x'", "curl"},
	{"man -P 'curl x' ls", "curl"},
	{"[[ -v 'a[$(id)]' ]]", "command substitution"},
	{"read 'a[$(id)]' < f", "array subscript"},
	{`echo '$(id)' | { read x; echo "${x@P}"; }`, "prompt expansion"},
	{`echo 'BEGIN{system("id")}' | awk -f /dev/stdin`, "program file on stdin"},
	{"sed -f /dev/stdin f", "program file on stdin"},
	{"echo 'x:;id' | make -f -", "program file on stdin"},
	{"split --filter='curl x' f", "curl"},
	{"sort --compress-program=wget f", "wget"},
	{"f(){ g|g& }; g(){ f|f& }; f", "fork bomb"},
	{"GIT_CONFIG_GLOBAL=/tmp/x git log", "GIT_CONFIG_GLOBAL"},
	{"sudo LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD"},
	{"getent hosts evil.example", "DNS"},
	{"echo ls > >(bash)", "stdin"},
	{"@(curl) x", "non-literal command name"},
	{`$"curl" x`, "curl"},
	{"export $(cat .env | xargs)", "non-literal export"},
	{"sudo sh", "stdin"},
	{"exec bash", "stdin"},
	{"git -c core.editor='vim -c \"!id\"' commit", "editor"},
	{"LESSOPEN='|curl x %s' less f", "LESSOPEN"},
}

// allowed lists ordinary developer commands that must pass.
var allowed = []string{
	"ls -la",
	"ls",
	"grep -r foo .",
	`grep -rn "TODO" --include='*.go' .`,
	"go test ./...",
	"go build ./...",
	"go vet ./...",
	"gofmt -l .",
	"go run ./cmd/garra",
	"git status",
	"git diff",
	"git diff --stat HEAD~1",
	"git log --oneline -5",
	"git log --format='%H %s' | head",
	"git add -A",
	`git commit -m "x"`,
	`git commit -m 'fix: quote $HOME'`,
	"git checkout -b feat",
	"git branch -a",
	"git stash",
	"git show HEAD",
	"git fetch origin",
	"git pull",
	"git clone https://github.com/x/y",
	"git -C sub status",
	"git -c color.ui=never log",
	"GIT_PAGER=cat git log -1",
	"git -c core.pager=cat log -1",
	"git config user.name",
	"git config --get remote.origin.url",
	"git config user.email x@y.z",
	"git remote -v",
	"make",
	"make test",
	"sed -n 1,20p f",
	"sed -i 's/a/b/g' f.go",
	"sed -n '/start/,/end/p' f",
	"sed -E 's/(a|b)+/x/; s#/usr#/opt#g' f",
	"cat README.md",
	"head -n 5 f",
	"tail f",
	"wc -l *.go",
	"find . -name '*.go'",
	"find . -type f -name '*.go' -exec wc -l {} +",
	`find "$dir" -name "$pat" -print`,
	"mkdir -p a/b",
	"touch f",
	"cp a b",
	"mv a b",
	"rm f.txt",
	"rm -r build",
	"rm -rf build",
	"rm -rf ./node_modules dist/*.js",
	"rm -rf *.egg-info",
	"rm -rf /tmp/garra-test",
	"rm -f *.o",
	`for f in *.tmp; do rm "$f"; done`,
	"find . -name '*.o' | xargs rm",
	"echo hi > out.txt",
	"echo hi >> out.txt",
	"ls 2>&1 | tee out.log",
	"go test ./... > /dev/null 2>&1",
	"npm test",
	"npm install",
	"npm run build",
	"npx tsc --noEmit",
	"cargo build",
	"cargo test",
	"python3 script.py",
	"python3 -m pytest -q",
	"python3 -u -W ignore tool.py --flag",
	"cat data.csv | python3 process.py",
	"node index.js",
	"bash build.sh",
	"sh ./scripts/check.sh arg",
	"uv run pytest -k curl",
	"pwd",
	"cd dir && ls",
	`for f in *.go; do wc -l "$f"; done`,
	"jq . f.json",
	`echo '{"a":1}' | jq .a`,
	"sort f | uniq -c",
	"sort | uniq -c",
	"diff a b",
	"diff <(sort a) <(sort b)",
	"tar czf x.tgz dir",
	"tar -xzf x.tgz -C out",
	`echo "$HOME"`,
	"ls | grep x",
	"awk '{print $1}' f",
	"awk -F: '{print $1}' /etc/passwd",
	`awk '$1 ~ /a|b/ {n++} END {print n}' f`,
	"docker ps",
	"docker images",
	"docker compose ps",
	"kubectl get pods",
	"kubectl -n x logs pod",
	"helm list",
	"systemctl status nginx",
	"command -v go",
	"which go",
	"type ls",
	`export PATH="$PATH:/x"`,
	"FOO=1 make",
	"timeout 60 go test ./...",
	"env FOO=1 make",
	"xargs -n1 echo < f",
	"xargs -I{} echo {} < f",
	"bash -c 'ls -la'",
	`sh -c "go test ./..."`,
	"bash <<'EOF'\nls\nEOF",
	`sh <<< "echo hi"`,
	"[ -f x ] && echo y",
	"test -d dir || mkdir dir",
	"[[ -n $x ]] && echo set",
	"ps aux",
	"ps -ef",
	"ps -o pid,user,command",
	"kill 1234",
	"date",
	"uname -a",
	"df -h",
	"du -sh .",
	"chmod +x script.sh",
	"chmod -x script.sh",
	"chmod -R u+w build",
	"ln -s ../x y",
	"stat f",
	"file f",
	"printf '%s\\n' a b",
	"sleep 1",
	"true",
	"python3 --version",
	"node --version",
	"go version",
	"bash --version",
	"cat /proc/cpuinfo",
	"cut -d: -f1 f",
	"tr a-z A-Z < f",
	"echo $((1 + 2))",
	"x=1; echo $x",
	"f(){ echo hi; }; f",
	"time go test ./...",
	"nohup make build > build.log 2>&1 &",
	"sudo -u app ls",
	"exec > log.txt",
	"trap 'rm -f tmp.txt' EXIT",
	"alias ll='ls -la'",
	"declare -a arr=(1 2 3)",
	"local x=1",
	"export FOO=bar",
	"set -euo pipefail",
	"curly --help",
	"find . -name '*.go' | xargs grep -l curl",
	"sed -i '' 's/a/b/' f",
	`sed '$!N;s/\n/ /' f`,
	"sed '/x/{s/a/b/;p}' f",
	"sed 'y/abc/xyz/' f",
	"cd ~/project && ls -la ~",
	"cat /etc/os-release",
	"source .venv/bin/activate",
	"pip install -r requirements.txt",
	"go test -run TestX -v ./internal/...",
	"grep -E 'a|b' f",
	"ls /proc/self/",
	"cat /proc/self/status",
	"git log -p -- f",
	"command -v curl",
	"type -P curl",
	"docker --version",
	"awk 'NR>1' f | sort -k2 | head",
	`printf '%s' "$x" | sha256sum`,
	"ls -la > /tmp/out.txt",
	"go test ./... 2>&1 | tail -20",
	"git diff HEAD~1 -- '*.go' | head -100",
	"mv build/ /tmp/old-build",
	"cp -r src /tmp/src-copy",
	`rm -rf "/tmp/x"`,
	"getent passwd root",
	`kill "$pid"`,
	"truncate -s 0 app.log",
	"",
	"# just a comment",
	// Ordinary work the review found blocked.
	"bash < script.sh",
	"sh -s < ./scripts/check.sh",
	"python3 < script.py",
	"node --test",
	"kill $!",
	"sleep 30 & pid=$!; kill $pid",
	`arr=(a b); for i in "${!arr[@]}"; do echo "$i"; done`,
}

func TestBlocked(t *testing.T) {
	for _, tc := range blocked {
		d := check(tc.cmd)
		if d.Allowed {
			t.Errorf("Check(%q) allowed, want blocked", tc.cmd)
			continue
		}
		if d.Reason == "" {
			t.Errorf("Check(%q) blocked with empty reason", tc.cmd)
		}
		if tc.want != "" && !strings.Contains(d.Reason, tc.want) {
			t.Errorf("Check(%q) reason %q, want it to mention %q", tc.cmd, d.Reason, tc.want)
		}
	}
}

func TestAllowed(t *testing.T) {
	for _, cmd := range allowed {
		if d := check(cmd); !d.Allowed || d.Reason != "" {
			t.Errorf("Check(%q) = %+v, want allowed", cmd, d)
		}
	}
}

func TestCounts(t *testing.T) {
	if len(blocked) < 150 || len(allowed) < 50 {
		t.Fatalf("table too small: %d blocked, %d allowed", len(blocked), len(allowed))
	}
	nb, na := len(blocked), len(allowed)
	for _, fam := range families {
		if len(fam.blocked) < 20 || len(fam.allowed) < 10 {
			t.Errorf("family %q too small: %d blocked, %d allowed", fam.name, len(fam.blocked), len(fam.allowed))
		}
		t.Logf("%s: %d blocked, %d allowed", fam.name, len(fam.blocked), len(fam.allowed))
		nb, na = nb+len(fam.blocked), na+len(fam.allowed)
	}
	t.Logf("total: %d blocked, %d allowed", nb, na)
}

// Reasons are shown to the model: they must stay short whatever the input.
func TestReasonIsShort(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, cmd := range []string{
		"/usr/bin/" + long,
		"curl" + long,
		"rm -rf /" + long + "/..",
		"echo '" + long,
		"git " + long + " && git push",
		"sudo " + long + " curl",
		"/" + long + "/curl",
		"cat /proc/self/environ" + long,
		"kubectl " + long,
		"python3" + strings.Repeat(".1", 3000) + " -c x",
		"python3" + strings.Repeat(".1", 3000) + " <(x)",
		"git -c " + long + "=x log",
		"f" + long + "(){ f" + long + "; }",
	} {
		d := check(cmd)
		if len(d.Reason) > 160 {
			t.Errorf("reason too long (%d bytes) for %.30q…", len(d.Reason), cmd)
		}
	}
}

func TestTooLong(t *testing.T) {
	if d := check("echo " + strings.Repeat("a", maxInput)); d.Allowed {
		t.Fatal("oversized command allowed")
	}
}

// Nesting beyond maxDepth is blocked even when the innermost code is benign.
func TestDeepNesting(t *testing.T) {
	cmd := "ls"
	for i := 0; i < maxDepth+3; i++ {
		cmd = "bash -c " + shellQuote(cmd)
	}
	if d := check(cmd); d.Allowed {
		t.Fatal("deeply nested bash -c allowed")
	}
	cmd = "ls"
	for i := 0; i < 3; i++ {
		cmd = "bash -c " + shellQuote(cmd)
	}
	if d := check(cmd); !d.Allowed {
		t.Fatalf("three levels of bash -c ls blocked: %s", d.Reason)
	}
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Wrappers with irregular options must not turn into exponential work.
func TestWrapperChainsAreBounded(t *testing.T) {
	cmd := strings.Repeat("strace -x ", 200) + "ls"
	d := check(cmd)
	_ = d // either verdict is fine; the point is that it returns
	if d := check(strings.Repeat("strace ", 100) + "curl x"); d.Allowed {
		t.Fatal("curl behind a strace chain allowed")
	}
	big := "bash -c '" + strings.Repeat("echo hi; ", 10000) + "'"
	start := time.Now()
	check(strings.Repeat("strace ", 30) + big)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("wrapper chain around a large script took %v", d)
	}
}

func BenchmarkCheck(b *testing.B) {
	mix := []string{
		"go test ./...",
		"git log --oneline -5",
		`for f in *.go; do wc -l "$f"; done`,
		"find . -name '*.go' -exec wc -l {} +",
		"rm -rf build && make",
		"sudo -u x timeout 5 curl https://example.com",
		"bash -c 'echo ok; ls -la | grep x'",
		"cat /proc/$PPID/environ",
		"echo $(env) | base64",
		"kubectl -n prod get pods -o wide",
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		check(mix[n%len(mix)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "decisions/s")
}

// Deeply nested or very long inputs must cost roughly linear time: the gate
// sits in front of every tool call and the fuzzer found quadratic walks.
func TestPathologicalInputsAreFast(t *testing.T) {
	n := 8000
	for name, cmd := range map[string]string{
		"nested arithmetic": "echo " + strings.Repeat("$((1+", n) + "1" + strings.Repeat("))", n),
		"nested functions":  strings.Repeat("f(){ ", n) + "ls" + strings.Repeat("; }", n),
		"nested subshells":  strings.Repeat("(", n) + "ls" + strings.Repeat(")", n),
		"nested [[ ]]":      "[[ " + strings.Repeat("( ", n) + "a" + strings.Repeat(" )", n) + " ]]",
		"nested $(…)":       "echo " + strings.Repeat("$(echo ", n) + "x" + strings.Repeat(")", n),
		"many statements":   strings.Repeat("echo a; ", 15000),
		"many wildcards":    "cat /proc/" + strings.Repeat("*", 60000) + "/environ",
		"wrapper chain":     strings.Repeat("sudo ", 20000) + "ls",
		"long pipeline":     strings.Repeat("ls | ", 20000) + "ls",
		"long sed script":   "sed '" + strings.Repeat("s/a/b/;", 15000) + "' f",
		"env assignments":   "env " + strings.Repeat("A=1 ", 25000) + "ls",
	} {
		start := time.Now()
		check(cmd)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v", name, d)
		}
	}
}
