"""The processor a report names."""

from autojudge.bench.machine import processor_name


def test_the_model_name_of_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t: avx2\n"
    )
    assert processor_name(cpuinfo) == "AMD EPYC 7B13"


def test_without_cpuinfo_the_platform_names_it(tmp_path):
    assert processor_name(tmp_path / "absent")
