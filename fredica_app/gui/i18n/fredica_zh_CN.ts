<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../window.py" line="92"/>
        <source>Library</source>
        <extracomment>What the window&apos;s snapshot loads: the newest runs and their tasks, up to these many. Between two reads of the queue&apos;s pause flag (another process may change it). The window has closed for good (not for a change of language).</extracomment>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="93"/>
        <source>Queue</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="94"/>
        <source>Run details</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="95"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="113"/>
        <source>Opening the data directory…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="148"/>
        <source>&amp;File</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="149"/>
        <source>Add &amp;files…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="150"/>
        <source>Add a f&amp;older…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="151"/>
        <source>Add &amp;URLs…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="153"/>
        <source>&amp;Quit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="154"/>
        <source>&amp;View</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="196"/>
        <source>Processing in this window</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="200"/>
        <source>Attached to the worker already running on this data directory: it processes the queue, this window views and controls it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="226"/>
        <source>Fredica could not open its data: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="228"/>
        <source>Fredica</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../window.py" line="247"/>
        <source>%n task(s) running</source>
        <translation type="unfinished">
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <location filename="../window.py" line="269"/>
        <source>[paused]</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../window.py" line="291"/>
        <source>Quit Fredica?</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../window.py" line="293"/>
        <source>%n task(s) are running. They will save their progress and continue the next time Fredica starts.</source>
        <translation type="unfinished">
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <location filename="../window.py" line="315"/>
        <source>Stopping: running tasks are saving their progress…</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
