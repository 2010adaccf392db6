// Tests the kernel-log XID parser on lines captured from real machines (fixtures/xid, with
// provenance) and on hand-made shapes: every time-stamp style, driver generation, container
// wrapper, and lines that must be skipped.
#include "agent_proto/xid_log.h"
#include "agent_proto/tests/printers.h"
#include "tests/support/paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::agent_proto {

namespace xid_log_test {

using namespace std::chrono;

std::filesystem::path fixture_dir() {
  return std::filesystem::path(gpurent::testing::source_dir()) / "agent_proto/tests/fixtures/xid";
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_dir() / name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const KernelLogClock kUtc2026{2026, minutes(0)};

Timestamp utc(int y, unsigned mo, unsigned d, int h, int mi, int s, int us = 0) {
  return Timestamp(sys_days(year(y) / month(mo) / day(d)).time_since_epoch() + hours(h) +
                   minutes(mi) + seconds(s) + microseconds(us));
}

XidEvent event(std::string pci, int xid, std::optional<int> pid, std::optional<std::string> process,
               std::string message, std::optional<Timestamp> at = std::nullopt) {
  return {std::move(pci), xid, pid, std::move(process), std::move(message), at};
}

// ---- Captured lines ----

struct FixtureCase {
  std::string file;
  std::size_t events;
  XidEvent first;  // the first event in the file, in full
};

const std::vector<FixtureCase> kFixtures = {
    {"gpud-pr46_dmesg-ctime.log", 4,
     event("0000:cb:00", 13, std::nullopt, std::nullopt,
           "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
           utc(2024, 8, 30, 11, 43, 9))},
    {"akash-support-244_dmesg-T.log", 4,
     event("0000:00:05", 43, 1045242, "pt_main_thread", "Ch 00000008",
           utc(2024, 7, 31, 23, 14, 18))},
    {"chia-gigahorse-301_dmesg.log", 10,
     event("0000:0a:00", 31, 13332, "cuda_plot_k32_v",
           "Ch 00000010, intr 00000000. MMU Fault: ENGINE CE2 HUBCLIENT_CE0 faulted @ "
           "0x7f29_5b8c9000. Fault is of type FAULT_PRIV_VIOLATION ACCESS_TYPE_VIRT_READ")},
    {"tinygrad-6947_dmesg.log", 2,
     event("0000:01:00", 31, 14292, "python",
           "Ch 00000030, intr 00000000. MMU Fault: ENGINE HOST0 HUBCLIENT_ESC faulted @ "
           "0x10_00200000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ")},
    {"open-gpu-kernel-modules-1150_journal.log", 7,
     event("0000:dc:00", 45, 1818990, "python3", "Ch 00000001 caused by previous Xid 149")},
    {"open-gpu-kernel-modules-363.log", 2,
     event("0000:08:00", 31, 169800, "chrome",
           "Ch 00000023, intr 00000000. MMU Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ "
           "0x0_0abe0000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ")},
    {"bumblebee-677_dmesg.log", 3,
     event("0000:01:00", 32, std::nullopt, std::nullopt, "Channel ID 00000000 intr 00004000")},
    {"bumblebee-608_dmesg.log", 2,
     event("0000:08:00", 44, std::nullopt, std::nullopt,
           "Ch 00000000, engmask 00000101, intr 10000000")},
    {"bumblebee-329_kern.log", 9,
     event("0000:01:00", 16, std::nullopt, std::nullopt, "Head 00000000 Count 00000000")},
    {"gpud-pr500_kmsg-xid119.log", 5,
     event("0000:9b:00", 119, 4071838, "python",
           "Timeout after 45s of waiting for RPC response from GPU4 GSP! Expected function 76 "
           "(GSP_RM_CONTROL) (0x20801702 0x4).")},
    {"gpud-pr1160-pr1174_kmsg-nvlink5.log", 5,
     event("0000:01:00", 144, std::nullopt, std::nullopt,
           "SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 0x00000000 "
           "0x00000000 0x00000000)")},
    {"nvsentinel-155_dmesg-fallen-off-no-xid.log", 0, {}},
    {"nvsentinel-155_xid79.log", 1,
     event("0000:44:00", 79, std::nullopt, std::nullopt, "GPU has fallen off the bus")},
    {"forum-jambi_syslog.log", 1,
     event("0000:03:00", 13, std::nullopt, std::nullopt,
           "0003 00000000 00008297 00001098 00000000 00000044", utc(2026, 5, 10, 22, 25, 1))},
    // A German month name: the event is read, its time is not guessed.
    {"notes-balrog_journal-de.log", 1,
     event("0000:01:00", 79, 1122, std::nullopt, "GPU has fallen off the bus.")},
    {"guide-fedora_journal-xid120.log", 1,
     event("0000:23:00", 120, std::nullopt, std::nullopt,
           "GSP task exception: load access page fault (cause:0xd) @ pc:0x13636b2, "
           "partition:2#0, task:3, gfid: 0",
           utc(2026, 8, 19, 21, 36, 23))},
    {"hand-made_variants.log", 10,
     event("0000:83:00", 79, 1234, "python", "GPU has fallen off the bus.",
           utc(2026, 7, 3, 22, 10, 46))},
};

TEST(XidFixtures, EveryFileIsCovered) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir())) {
    if (entry.path().extension() != ".log") continue;
    ++files;
    bool listed = false;
    for (const auto& c : kFixtures) listed = listed || c.file == entry.path().filename();
    EXPECT_TRUE(listed) << entry.path().filename() << " has no expectations";
  }
  EXPECT_EQ(files, kFixtures.size());
}

TEST(XidFixtures, ReadsEveryFile) {
  for (const auto& c : kFixtures) {
    SCOPED_TRACE(c.file);
    auto events = parse_xid_log(read_fixture(c.file), kUtc2026);
    ASSERT_EQ(events.size(), c.events);
    if (!events.empty()) {
      EXPECT_EQ(events[0], c.first);
    }
    for (const auto& e : events) {
      // What the agent sends must be what the control plane accepts.
      EXPECT_EQ(xid_event_from_json(nlohmann::json::parse(to_json(e).dump()), "e"), e);
    }
  }
}

TEST(XidFixtures, SpotChecks) {
  auto akash = parse_xid_log(read_fixture("akash-support-244_dmesg-T.log"), kUtc2026);
  EXPECT_EQ(akash[2], event("0000:00:07", 31, 2512125, "python3.10",
                            "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS "
                            "GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type "
                            "FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
                            utc(2024, 8, 5, 3, 54, 13)));
  EXPECT_EQ(akash[3],
            event("0000:00:08", 94, std::nullopt, std::nullopt,
                  "Contained: SM (0x1). RST: No, D-RST: No", utc(2024, 8, 9, 13, 32, 56)));
  auto gpud = parse_xid_log(read_fixture("gpud-pr46_dmesg-ctime.log"), kUtc2026);
  EXPECT_EQ(gpud[3].xid, 109);
  EXPECT_EQ(gpud[3].pid, 1797828);
  EXPECT_EQ(gpud[3].process, "pt_main_thread");
  EXPECT_EQ(gpud[3].message, "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005");
  auto nvlink = parse_xid_log(read_fixture("gpud-pr1160-pr1174_kmsg-nvlink5.log"), kUtc2026);
  EXPECT_EQ(nvlink[3].pci, "0019:01:00");
  EXPECT_EQ(nvlink[4].xid, 145);
  auto old = parse_xid_log(read_fixture("bumblebee-329_kern.log"), kUtc2026);
  EXPECT_EQ(old.back(), event("0000:01:00", 8, std::nullopt, std::nullopt, "Channel 00000000"));
}

TEST(XidFixtures, HandMadeVariants) {
  auto e = parse_xid_log(read_fixture("hand-made_variants.log"), kUtc2026);
  ASSERT_EQ(e.size(), 10u);
  // journalctl, zero-padded day.
  EXPECT_EQ(e[1].at, utc(2026, 7, 3, 22, 10, 46));
  EXPECT_EQ(e[1].xid, 48);
  // journalctl -o short-iso (+0000) and rsyslog (+00:00 with microseconds).
  EXPECT_EQ(e[2].at, utc(2026, 7, 3, 22, 10, 46));
  EXPECT_EQ(e[2].pid, std::nullopt);
  EXPECT_EQ(e[3].at, utc(2026, 7, 3, 22, 10, 46, 123456));
  EXPECT_EQ(e[3].xid, 64);
  // CRI container log: nanoseconds cut to microseconds.
  EXPECT_EQ(e[4].at, utc(2026, 7, 3, 22, 10, 46, 123456));
  EXPECT_EQ(e[4].process, "python3");
  // Docker JSON log: the line's own dmesg -T stamp wins over the runtime's "time".
  EXPECT_EQ(e[5], event("0000:83:00", 95, std::nullopt, std::nullopt,
                        "Uncontained: FBHUB. RST: Yes, D-RST: No", utc(2026, 7, 3, 22, 10, 46)));
  // ... and the runtime's time is used when the line has none.
  EXPECT_EQ(e[6], event("0000:83:00", 31, 77, "python", "Ch 00000008",
                        utc(2026, 7, 3, 22, 10, 48, 500000)));
  // name= without pid=, and the `channel 0x` spelling.
  EXPECT_EQ(e[7], event("0000:01:00", 109, std::nullopt, "worker",
                        "channel 0x00000028, errorString CTX SWITCH TIMEOUT, Info 0x1c022"));
  // A bus id with its function.
  EXPECT_EQ(e[8], event("0000:3b:00.0", 94, std::nullopt, std::nullopt, "Ch 00000008"));
  // An ISO stamp in brackets after a host and facility.
  EXPECT_EQ(e[9].at, utc(2026, 4, 22, 21, 27, 51, 291660));
  EXPECT_EQ(e[9].xid, 119);
}

// ---- Time stamps ----

TEST(XidLine, TimeStampShapes) {
  const std::string body =
      "NVRM: Xid (PCI:0000:83:00): 79, pid=1234, name=python, GPU has fallen off the bus.";
  struct Case {
    std::string prefix;
    std::optional<Timestamp> at;
  };
  const std::vector<Case> cases = {
      {"", std::nullopt},
      {"[12345.678901] ", std::nullopt},
      {"[    0.000000] ", std::nullopt},
      {"4,9921,93701234,-;", std::nullopt},  // /dev/kmsg: microseconds since boot
      {"[Mon Jul  3 22:10:46 2026] ", utc(2026, 7, 3, 22, 10, 46)},
      {"[Fri Jul 03 22:10:46 2026] ", utc(2026, 7, 3, 22, 10, 46)},
      {"Jul  3 22:10:46 host kernel: [ 123.4] ", utc(2026, 7, 3, 22, 10, 46)},
      {"Jul 03 22:10:46 host kernel: ", utc(2026, 7, 3, 22, 10, 46)},
      {"Dec 31 23:59:59 host kernel: ", utc(2026, 12, 31, 23, 59, 59)},
      {"2026-07-03T22:10:46.123456+00:00 host kernel: ", utc(2026, 7, 3, 22, 10, 46, 123456)},
      {"2026-07-03T22:10:46+02:00 host kernel: ", utc(2026, 7, 3, 20, 10, 46)},
      {"2026-07-03T22:10:46-0530 host kernel: ", utc(2026, 7, 4, 3, 40, 46)},
      {"2026-07-03T22:10:46Z host kernel: ", utc(2026, 7, 3, 22, 10, 46)},
      {"2026-07-03 22:10:46 host kernel: ", utc(2026, 7, 3, 22, 10, 46)},
      // Dates that do not exist and out-of-range times leave `at` absent.
      {"Feb 30 22:10:46 host kernel: ", std::nullopt},
      {"2026-13-03T22:10:46Z host kernel: ", std::nullopt},
      {"2026-07-03T24:10:46Z host kernel: ", std::nullopt},
      {"[Mon Xyz  3 22:10:46 2026] ", std::nullopt},
      {"1969-12-31T23:59:59Z host kernel: ", std::nullopt},
  };
  for (const auto& c : cases) {
    auto e = parse_xid_line(c.prefix + body, kUtc2026);
    ASSERT_TRUE(e) << c.prefix;
    EXPECT_EQ(e->at, c.at) << c.prefix;
    EXPECT_EQ(e->xid, 79) << c.prefix;
    EXPECT_EQ(e->pid, 1234) << c.prefix;
  }
}

TEST(XidLine, LocalTimeUsesTheClocksYearAndOffset) {
  const KernelLogClock berlin_2025{2025, minutes(120)};
  auto line = "Jul  3 22:10:46 host kernel: NVRM: Xid (PCI:0000:83:00): 13, Graphics Exception";
  EXPECT_EQ(parse_xid_line(line, berlin_2025)->at, utc(2025, 7, 3, 20, 10, 46));
  auto dmesg_t = "[Fri Jul  3 22:10:46 2026] NVRM: Xid (PCI:0000:83:00): 13, x";
  EXPECT_EQ(parse_xid_line(dmesg_t, berlin_2025)->at, utc(2026, 7, 3, 20, 10, 46));
  // A stamp with its own zone ignores the clock's offset.
  auto iso = "2026-07-03T22:10:46Z host kernel: NVRM: Xid (PCI:0000:83:00): 13, x";
  EXPECT_EQ(parse_xid_line(iso, berlin_2025)->at, utc(2026, 7, 3, 22, 10, 46));
  // Feb 29 exists only in leap years.
  auto feb29 = "Feb 29 00:00:00 host kernel: NVRM: Xid (PCI:0000:83:00): 13, x";
  EXPECT_EQ(parse_xid_line(feb29, {2028, minutes(0)})->at, utc(2028, 2, 29, 0, 0, 0));
  EXPECT_EQ(parse_xid_line(feb29, {2026, minutes(0)})->at, std::nullopt);
}

// ---- The driver's part ----

TEST(XidLine, DriverVariants) {
  struct Case {
    std::string line;
    XidEvent expected;
  };
  const std::vector<Case> cases = {
      {"NVRM: Xid (PCI:0000:83:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
       event("0000:83:00", 79, 1234, "python", "GPU has fallen off the bus.")},
      {"NVRM: Xid (0000:83:00): 13, Graphics Exception on (GPC 0, TPC 0)",
       event("0000:83:00", 13, std::nullopt, std::nullopt, "Graphics Exception on (GPC 0, TPC 0)")},
      {"NVRM: Xid (PCI:0000:83:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008",
       event("0000:83:00", 45, std::nullopt, std::nullopt, "Ch 00000008")},
      {"NVRM: Xid (PCI:0000:83:00): 79, GPU has fallen off the bus.",
       event("0000:83:00", 79, std::nullopt, std::nullopt, "GPU has fallen off the bus.")},
      {"NVRM: Xid (PCI:0000:83:00): 79", event("0000:83:00", 79, std::nullopt, std::nullopt, "")},
      {"NVRM: Xid (0000:01:00): 16, ", event("0000:01:00", 16, std::nullopt, std::nullopt, "")},
      {"NVRM: Xid (PCI:0000:83:00): 31, pid=12, name=Web Content, Ch 00000001",
       event("0000:83:00", 31, 12, "Web Content", "Ch 00000001")},
      {"NVRM: Xid (PCI:0000:83:00): 31, pid=12, name=python3",
       event("0000:83:00", 31, 12, "python3", "")},
      // A pid too large for any kernel is dropped, the rest kept.
      {"NVRM: Xid (PCI:0000:83:00): 31, pid=99999999999, name=x, y",
       event("0000:83:00", 31, std::nullopt, "x", "y")},
      // Control characters and bytes that are not ASCII cannot reach JSON or logs.
      {"NVRM: Xid (PCI:0000:83:00): 31, pid=1, name=py\xc3\xa9, a\tb\x01",
       event("0000:83:00", 31, 1, "py??", "a b")},
      {"NVRM: Xid (PCI:0000:83:00): 13, x\r\n",
       event("0000:83:00", 13, std::nullopt, std::nullopt, "x")},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(parse_xid_line(c.line, kUtc2026), c.expected) << c.line;
  }
}

TEST(XidLine, LongMessagesAreCutToWhatTheJsonFormTakes) {
  auto line = "NVRM: Xid (PCI:0000:83:00): 31, pid=1, name=" + std::string(300, 'n') + ", " +
              std::string(2000, 'm');
  auto e = parse_xid_line(line, kUtc2026);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message.size(), kMaxXidMessageBytes);
  EXPECT_EQ(e->process->size(), 128u);
  EXPECT_EQ(xid_event_from_json(to_json(*e), "e"), *e);
}

TEST(XidLine, OtherLinesAreSkipped) {
  for (const std::string& line : std::vector<std::string>{
           "",
           "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).",
           "NVRM: GPU at PCI:0000:01:00: GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513",
           "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44",
           "NVRM: Xid",
           "NVRM: Xid (PCI:0000:83:00",
           "NVRM: Xid (PCI:0000:83:00): ",
           "NVRM: Xid (PCI:0000:83:00): 79x, bad code",
           "NVRM: Xid (PCI:0000:83:00): 0, not a code",
           "NVRM: Xid (PCI:0000:83:00): 10000, too large",
           "NVRM: Xid (PCI:0000:83:00) 79, no colon",
           "NVRM: Xid (PCI:zz:83:00): 79, not hex",
           "NVRM: Xid (): 79, empty",
           "NVRM: Xid (PCI:" + std::string(40, '0') + "): 79, long bus id",
           "nvrm: xid (PCI:0000:83:00): 79, lower case",
           "{\"log\":\"no xid here\"} NVRM: Xid",
           "{\"log\": 5, \"x\": \"NVRM: Xid (PCI:0000:83:00): 79\"}",
           "{not json NVRM: Xid (PCI:0000:83:00): 79",
       }) {
    EXPECT_EQ(parse_xid_line(line, kUtc2026), std::nullopt) << line;
  }
}

TEST(XidLine, AnOverlongLineIsSkippedUnread) {
  auto line = std::string(kMaxKernelLogLineBytes, ' ') + "NVRM: Xid (PCI:0000:83:00): 79";
  EXPECT_EQ(parse_xid_line(line, kUtc2026), std::nullopt);
  EXPECT_TRUE(parse_xid_log("x\n" + line + "\nNVRM: Xid (PCI:0000:83:00): 48\n", kUtc2026).size() ==
              1);
}

TEST(XidLog, MixedLogKeepsOrderAndSkipsTheRest) {
  auto events = parse_xid_log(
      "boot\r\n"
      "[1.0] NVRM: Xid (PCI:0000:01:00): 13, a\r\n"
      "\r\n"
      "[2.0] NVRM: Xid (0000:02:00): 48, b\r\n"
      "[3.0] NVRM: Xid (PCI:0000:03:00): 79",
      kUtc2026);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].message, "a");
  EXPECT_EQ(events[1].pci, "0000:02:00");
  EXPECT_EQ(events[2].xid, 79);
  EXPECT_TRUE(parse_xid_log("", kUtc2026).empty());
}

}  // namespace xid_log_test
}  // namespace gpurent::agent_proto
