import Foundation
import XCTest

/// The shipped Slurm script on a real single-node Slurm cluster (Debian's slurmctld, slurmd
/// and munge, started here as root with a minimal slurm.conf in a temporary directory): a job
/// array of `vivify work` tasks and a dependent join give the unsegmented run's file.
final class SlurmTests: XCTestCase {
    /// A running cluster: its directory and the daemons, run in the foreground as children of
    /// the test. They are started with posix_spawn, not Foundation's Process: Foundation waits
    /// for a long-lived child on the thread that notices every child's exit (so later commands
    /// would never be seen to end), and a daemon that forks keeps descriptors Foundation waits on.
    final class Cluster {
        let dir: String
        private var daemons: [pid_t] = []
        init(dir: String) { self.dir = dir }
        var environment: [String: String] { ProcessInfo.processInfo.environment.merging(["SLURM_CONF": dir + "/slurm.conf"]) { $1 } }

        /// Starts munged, slurmctld and slurmd; throws (or skips off CI) when they cannot run here.
        static func start() throws -> Cluster {
            let tools = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/squeue"]
            let missing = tools.filter { !FileManager.default.isExecutableFile(atPath: $0) }
            if !missing.isEmpty || getuid() != 0 {
                let why = missing.isEmpty ? "the daemons must run as root" : "missing \(missing.joined(separator: ", ")) (scripts/install-deps installs them)"
                if ProcessInfo.processInfo.environment["CI"] == "true" { throw NSError(domain: "slurm", code: 1, userInfo: [NSLocalizedDescriptionKey: why]) }
                throw XCTSkip("No Slurm cluster here: \(why).")
            }
            let dir = try CLI.tempDir()
            for sub in ["state", "spool", "munge"] { try FileManager.default.createDirectory(atPath: dir + "/" + sub, withIntermediateDirectories: true) }
            var key = [UInt8](repeating: 0, count: 1024)
            for i in key.indices { key[i] = UInt8.random(in: 0...255) }
            guard FileManager.default.createFile(atPath: dir + "/munge/munge.key", contents: Data(key), attributes: [.posixPermissions: 0o400]) else {
                throw NSError(domain: "slurm", code: 5, userInfo: [NSLocalizedDescriptionKey: "cannot write the munge key in \(dir)"])
            }
            // The node's short host name, as slurmd reports it (gethostname, up to the first dot).
            var host = [CChar](repeating: 0, count: 256)
            gethostname(&host, host.count)
            let name = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let node = name.split(separator: ".").first.map(String.init) ?? "localhost"
            let conf = """
            ClusterName=vivifytest
            SlurmctldHost=\(node)
            SlurmUser=root
            SlurmctldPort=16817
            SlurmdPort=16818
            AuthType=auth/munge
            AuthInfo=socket=\(dir)/munge/munge.socket
            CredType=cred/munge
            StateSaveLocation=\(dir)/state
            SlurmdSpoolDir=\(dir)/spool
            SlurmctldPidFile=\(dir)/slurmctld.pid
            SlurmdPidFile=\(dir)/slurmd.pid
            SlurmctldLogFile=\(dir)/slurmctld.log
            SlurmdLogFile=\(dir)/slurmd.log
            ProctrackType=proctrack/linuxproc
            TaskPlugin=task/none
            SelectType=select/cons_tres
            SelectTypeParameters=CR_CPU
            AccountingStorageType=accounting_storage/none
            JobCompType=jobcomp/none
            JobAcctGatherType=jobacct_gather/none
            MpiDefault=none
            ReturnToService=2
            NodeName=\(node) CPUs=\(max(1, ProcessInfo.processInfo.activeProcessorCount)) State=UNKNOWN
            PartitionName=main Nodes=\(node) Default=YES MaxTime=INFINITE State=UP

            """
            try conf.write(toFile: dir + "/slurm.conf", atomically: true, encoding: .utf8)
            let cluster = Cluster(dir: dir)
            do {
                try cluster.daemon("/usr/sbin/munged", ["--foreground", "--force", "--key-file=\(dir)/munge/munge.key", "--socket=\(dir)/munge/munge.socket",
                                                        "--pid-file=\(dir)/munge/munged.pid", "--log-file=\(dir)/munge/munged.log", "--seed-file=\(dir)/munge/seed"],
                                   readyWhen: dir + "/munge/munge.socket")
                try cluster.daemon("/usr/sbin/slurmctld", ["-D", "-f", dir + "/slurm.conf"], readyWhen: dir + "/slurmctld.pid")
                try cluster.daemon("/usr/sbin/slurmd", ["-D", "-f", dir + "/slurm.conf"], readyWhen: dir + "/slurmd.pid")
            } catch {
                cluster.stop()
                throw error
            }
            // Ready when the node is idle.
            let end = Date().addingTimeInterval(30)
            while Date() < end {
                if let r = try? cluster.run("/usr/bin/sinfo", ["-h", "-o", "%t"]), String(decoding: r.stdout, as: UTF8.self).contains("idle") { return cluster }
                usleep(200_000)
            }
            cluster.stop()
            throw NSError(domain: "slurm", code: 2, userInfo: [NSLocalizedDescriptionKey: "the node did not come up: \(cluster.logs())"])
        }

        /// Starts a daemon in the foreground (its output to DIR/NAME.out, every other inherited
        /// descriptor closed) and waits until `readyWhen` exists; throws with its output when it
        /// exits or is not ready in 20 s.
        func daemon(_ path: String, _ args: [String], readyWhen ready: String) throws {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let log = dir + "/\(name).out"
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            // The shell closes what the test process holds open beyond 0, 1 and 2, then becomes the daemon.
            // (bash: dash takes only one-digit descriptors in a redirection.)
            let close = "for fd in /proc/$$/fd/*; do n=${fd##*/}; [ \"$n\" -gt 2 ] && eval \"exec $n>&-\"; done; exec \"$@\""
            let argv = ["/bin/bash", "-c", close, name, path] + args
            let envp = environment.map { "\($0.key)=\($0.value)" }
            var cArgs = argv.map { strdup($0) } + [nil]
            var cEnv = envp.map { strdup($0) } + [nil]
            defer { (cArgs + cEnv).forEach { free($0) } }
            var pid: pid_t = 0
            let code = posix_spawn(&pid, "/bin/bash", &actions, nil, &cArgs, &cEnv)
            guard code == 0 else { throw NSError(domain: "slurm", code: Int(code), userInfo: [NSLocalizedDescriptionKey: "cannot start \(path): \(String(cString: strerror(code)))"]) }
            daemons.append(pid)
            let said = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
            let end = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: ready) {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    daemons.removeAll { $0 == pid }
                    throw NSError(domain: "slurm", code: 4, userInfo: [NSLocalizedDescriptionKey: "\(path) exited (status \(status)): \(said())"])
                }
                if Date() > end { throw NSError(domain: "slurm", code: 3, userInfo: [NSLocalizedDescriptionKey: "\(path) not ready in 20 s: \(said())"]) }
                usleep(50_000)
            }
        }

        func run(_ path: String, _ args: [String], cwd: String? = nil, extra: [String: String] = [:]) throws -> CLI.Result {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: path)
            p.arguments = args
            p.environment = environment.merging(extra) { $1 }
            if let cwd { p.currentDirectoryURL = URL(fileURLWithPath: cwd) }
            let out = Pipe(), err = Pipe()
            p.standardOutput = out
            p.standardError = err
            p.standardInput = FileHandle.nullDevice
            try p.run()
            let o = out.fileHandleForReading.readDataToEndOfFile()
            let e = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return CLI.Result(code: p.terminationStatus, stdout: o, stderr: String(decoding: e, as: UTF8.self))
        }

        func logs() -> String {
            ["slurmctld.log", "slurmd.log"].map { (try? String(contentsOfFile: dir + "/" + $0, encoding: .utf8).suffix(1500)).map(String.init) ?? "" }.joined(separator: "\n")
        }

        /// Stops the daemons it started, by their pids, the last started first (SIGTERM, then
        /// SIGKILL after 5 s), and reaps them.
        func stop() {
            for pid in daemons.reversed() {
                kill(pid, SIGTERM)
                var status: Int32 = 0
                var gone = false
                for _ in 0..<50 {
                    if waitpid(pid, &status, WNOHANG) == pid { gone = true; break }
                    usleep(100_000)
                }
                if !gone {
                    kill(pid, SIGKILL)
                    waitpid(pid, &status, 0)
                }
            }
            daemons.removeAll()
        }
    }

    func testShippedArrayScriptAndJoinOnARealCluster() throws {
        let cluster = try Cluster.start()
        defer { cluster.stop() }
        let dir = try CLI.tempDir()
        let source = try SegmentTests.clip(in: dir)
        let reference = try SegmentTests.reference(source, dir)
        let work = dir + "/work"
        let out = dir + "/slurm.mkv"
        let plan = try CLI.vivify(["plan", source, out, "--work", work] + SegmentTests.upscaleJob)
        XCTAssertEqual(plan.code, 0, plan.stderr)
        let script = CLI.packageRoot.appendingPathComponent("deploy/slurm/vivify-array.sbatch").path
        let submit = try cluster.run(script, [work], cwd: dir, extra: ["VIVIFY": CLI.binary])
        XCTAssertEqual(submit.code, 0, submit.stderr)
        let said = String(decoding: submit.stdout, as: UTF8.self)
        print("Slurm: \(said.trimmingCharacters(in: .whitespacesAndNewlines))")
        XCTAssertTrue(said.contains("(4 segments)"), said)
        // Wait for the queue to empty (the array, then the join).
        let end = Date().addingTimeInterval(300)
        var queue = ""
        repeat {
            usleep(500_000)
            queue = String(decoding: try cluster.run("/usr/bin/squeue", ["-h"]).stdout, as: UTF8.self)
        } while !queue.isEmpty && Date() < end
        XCTAssertEqual(queue, "", "jobs still queued: \(cluster.logs())")
        let logs = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".log") }.sorted()
        XCTAssertEqual(logs.count, 5, "four array tasks and the join logged: \(logs)")
        let joinLog = logs.first { $0.hasPrefix("vivify-join-") }.flatMap { try? String(contentsOfFile: dir + "/" + $0, encoding: .utf8) } ?? ""
        print("Slurm join: \(joinLog.trimmingCharacters(in: .whitespacesAndNewlines))")
        XCTAssertTrue(joinLog.contains("joined 120 frames"), joinLog)
        let probe = try CLI.probe(out)
        XCTAssertEqual(CLI.decodedFrames(probe), 120)
        XCTAssertEqual(try SegmentTests.audioEnd(out), 4.5, accuracy: 0.05)
        XCTAssertEqual(try SegmentTests.frameDigests(out), try SegmentTests.frameDigests(reference), "frames, timestamps and pixels of the unsegmented run")
        XCTAssertEqual(try SegmentTests.frameDigests(out, stream: "a"), try SegmentTests.frameDigests(reference, stream: "a"))
        // The join removed the segments and manifest, leaving its record (and lock), so that a
        // requeued join task finds the job done.
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: work)), ["joined.json", "join.lock"], "the join removed the work files")
    }
}
